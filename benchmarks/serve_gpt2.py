"""A real model about to be served: Hugging Face GPT-2 (random weights from a small config, nothing
downloaded) scoring requests of 1-4 sequences of 16-64 tokens, called as people call it
(`model(input_ids=..., attention_mask=..., use_cache=False)`), 200 requests drawn with a seed.

    tcdoctor analyze benchmarks/serve_gpt2.py:build --threads 1
    python benchmarks/serve_by_hand.py benchmarks/serve_gpt2.py:build --threads 1

The issue-55 check of the serving section on a model users bring: the compiles its traffic
triggers, the warm-up that covers them, the shape strategies, a restart, and whether it exports.
"""

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402

import tcdoctor  # noqa: E402

VOCAB = 512


def request(batch: int, seq: int) -> dict:
    ids = torch.randint(2, VOCAB, (batch, seq))
    return {"input_ids": ids, "attention_mask": torch.ones_like(ids), "use_cache": False}


def build():
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    config = GPT2Config(
        n_layer=4, n_head=4, n_embd=128, vocab_size=VOCAB, n_positions=128,
        bos_token_id=0, eos_token_id=1, pad_token_id=1,
    )  # fmt: skip
    model = GPT2LMHeadModel(config).eval()
    traffic = tcdoctor.Traffic.shapes(
        request, n=200, seed=0, batch=range(1, 5), seq={16: 4, 32: 3, 48: 2, 64: 1}
    )
    return tcdoctor.Workload(model, (), kwargs=request(2, 16), traffic=traffic)
