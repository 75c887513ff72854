"""Your own generation loop, gpt-fast style (issue 60): a tiny hand-written decoder (seeded random
weights, a few layers, a static KV cache tensor indexed by position), a prefill function and a
one-token decode function, prompts of varying lengths. No transformers needed.

    tcdoctor analyze samples/generate_loop.py:build --backend aot_eager

tcdoctor compiles the decode step as gpt-fast does (`decode = torch.compile(decode, ...)`), leaves
the prefill eager, and reports time to first token, inter-token latency, tokens/s eager against
compiled, each compile during generation (request, decode step, cache length, guard) and the greedy
tokens compared with eager's.
"""

import torch
import torch.nn.functional as F
from torch import nn

import tcdoctor

VOCAB, DIM, HEADS, LAYERS, MAX_LEN = 256, 64, 4, 2, 96
LENGTHS = (8, 24, 16, 40, 12, 32)  # prompt lengths, in traffic order
NEW_TOKENS = 12


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(DIM), nn.LayerNorm(DIM)
        self.qkv = nn.Linear(DIM, 3 * DIM, bias=False)
        self.out = nn.Linear(DIM, DIM, bias=False)
        self.mlp = nn.Sequential(nn.Linear(DIM, 4 * DIM), nn.GELU(), nn.Linear(4 * DIM, DIM))

    def forward(self, x, input_pos, kv):
        """`kv`: this layer's [2, heads, MAX_LEN, head dim] slice of the cache, written at input_pos."""
        b, t, _ = x.shape
        q, k, v = self.qkv(self.norm1(x)).view(b, t, 3, HEADS, DIM // HEADS).unbind(2)
        q, k, v = (z.transpose(1, 2) for z in (q, k, v))  # [b, heads, t, head dim]
        kv[0, :, input_pos] = k[0]
        kv[1, :, input_pos] = v[0]
        mask = torch.arange(MAX_LEN, device=x.device) <= input_pos[:, None]  # [t, MAX_LEN]
        y = F.scaled_dot_product_attention(q, kv[0][None], kv[1][None], attn_mask=mask)
        x = x + self.out(y.transpose(1, 2).reshape(b, t, DIM))
        return x + self.mlp(self.norm2(x))


class TinyDecoder(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(VOCAB, DIM)
        self.pos = nn.Embedding(MAX_LEN, DIM)
        self.blocks = nn.ModuleList(Block() for _ in range(LAYERS))
        self.norm = nn.LayerNorm(DIM)
        self.head = nn.Linear(DIM, VOCAB, bias=False)

    def forward(self, idx, input_pos, cache):
        x = self.embed(idx) + self.pos(input_pos)
        for i, block in enumerate(self.blocks):
            x = block(x, input_pos, cache[i])
        return self.head(self.norm(x))  # [1, t, VOCAB]


def new_cache(model):
    """A fresh static KV cache for one request: [layers, 2, heads, MAX_LEN, head dim]."""
    return torch.zeros(LAYERS, 2, HEADS, MAX_LEN, DIM // HEADS)


def prefill(model, idx, input_pos, cache):
    return model(idx, input_pos, cache)


def decode_one_token(model, token, input_pos, cache):
    return model(token, input_pos, cache)


def tiny_decoder():
    torch.manual_seed(0)
    return TinyDecoder().eval()


def prompts(lengths=LENGTHS, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [torch.randint(0, VOCAB, (n,), generator=g) for n in lengths]


def build():
    return tcdoctor.Generation(
        tiny_decoder(),
        prefill=prefill,
        decode=decode_one_token,
        cache=new_cache,
        prompts=prompts(),
        max_new_tokens=NEW_TOKENS,
    )
