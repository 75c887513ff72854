"""A tiny Llama served by `generate` (issue 60): random weights from a `transformers` config (no
download), seeded, prompts of varying lengths.

    tcdoctor analyze samples/generate.py:build --backend aot_eager

The report's serving section then has a generation part: time to first token, inter-token
latency, tokens/s eager against compiled (`model.forward = torch.compile(model.forward)`), each
compile during generation with its request, decode step and cache length, and the greedy tokens
compared with eager's. `build_static` serves the same prompts with a static cache.
"""

import torch

import tcdoctor

LENGTHS = (8, 24, 16, 40, 12, 32, 20, 48)  # prompt lengths, in traffic order
NEW_TOKENS = 12


def tiny_llama():
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=512,
        hidden_size=128,
        intermediate_size=256,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=256,
    )
    return LlamaForCausalLM(config).eval()


def prompts(lengths=LENGTHS, vocab=512, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [torch.randint(3, vocab, (n,), generator=g) for n in lengths]


def build():
    return tcdoctor.Generation(tiny_llama(), prompts=prompts(), max_new_tokens=NEW_TOKENS)


def build_static():
    return tcdoctor.Generation(
        tiny_llama(),
        prompts=prompts(),
        max_new_tokens=NEW_TOKENS,
        generate_kwargs={"cache_implementation": "static"},
    )
