"""A small text model served with variable batch sizes and sequence lengths (issue 55's sample).

The traffic: 200 requests, batch sizes 1-8 drawn uniformly, sequence lengths from a histogram of
six lengths, seeded. Under plain `torch.compile` the first request compiles, the second size
recompiles with automatic dynamic shapes, and batch 1 (0/1 specialisation) compiles once more:
`tcdoctor analyze samples/serving.py:build --traffic 200` names each compile with its request and
PyTorch's guard, derives the warm-up that covers them and proves it in a fresh process. Compiled
with static shapes (`dynamic=False`, one of the strategies) the ~40 distinct shapes reach
`recompile_limit` (8) and the rest of the traffic is served by the eager fallback, which the
report names request by request. `buckets` gives the sequence lengths a padding server rounds up to.

`build_warmed` is the same model and traffic served by a server that warms up first
(`Traffic.shapes(..., warmup=WARMUP)`): WARMUP is the warm-up `analyze --traffic` derives for
`build` (the requests whose guards failed: batch 7 × seq 48, then 7 × 16, 8 × 24 and 1 × 16).
Its compiles are the server's start-up cost, so the traffic compiles nothing and its proof passes:
`tcdoctor check samples/serving.py:build_warmed --max-traffic-compiles 0 --require-warmup-proof`
passes, and fails on `build`.
"""

import torch
from torch import nn
from torch.nn import functional as F

import tcdoctor

VOCAB, DIM, HEADS = 1000, 64, 4


class Block(nn.Module):
    """Pre-norm attention + MLP: the repeated block regional compilation compiles once."""

    def __init__(self) -> None:
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(DIM), nn.LayerNorm(DIM)
        self.qkv, self.proj = nn.Linear(DIM, 3 * DIM), nn.Linear(DIM, DIM)
        self.mlp = nn.Sequential(nn.Linear(DIM, 4 * DIM), nn.GELU(), nn.Linear(4 * DIM, DIM))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, _ = x.shape
        q, k, v = self.qkv(self.norm1(x)).view(b, s, 3, HEADS, DIM // HEADS).unbind(2)
        a = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2))
        x = x + self.proj(a.transpose(1, 2).reshape(b, s, DIM))
        return x + self.mlp(self.norm2(x))


class TextModel(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(VOCAB, DIM)
        self.blocks = nn.ModuleList([Block(), Block()])
        self.head = nn.Linear(DIM, 8)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.embed(ids)
        for block in self.blocks:
            x = block(x)
        return self.head(x.mean(dim=1))


def request(batch: int, seq: int) -> tuple:
    return (torch.randint(0, VOCAB, (batch, seq)),)


# the warm-up analyze --traffic derives for build(): one request per compile, in traffic order
WARMUP = [
    {"batch": 7, "seq": 48},
    {"batch": 7, "seq": 16},
    {"batch": 8, "seq": 24},
    {"batch": 1, "seq": 16},
]


def _workload(warmup: list | None) -> tcdoctor.Workload:
    torch.manual_seed(0)
    traffic = tcdoctor.Traffic.shapes(
        request,
        n=200,
        seed=0,
        batch=range(1, 9),
        seq={16: 4, 24: 3, 32: 3, 48: 2, 64: 2, 96: 1},
        buckets={"seq": [32, 64, 96]},
        warmup=warmup,
    )
    return tcdoctor.Workload(TextModel().eval(), request(4, 32), traffic=traffic)


def build():
    return _workload(None)


def build_warmed():
    """The same traffic, the server warming up first with WARMUP."""
    return _workload(WARMUP)
