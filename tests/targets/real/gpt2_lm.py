"""A tiny Hugging Face GPT-2 language model called the way people call it: keyword arguments
(``model(input_ids=..., attention_mask=..., use_cache=True)``), and the output carries a
``DynamicCache`` in ``past_key_values``. Random weights from a small config; nothing is downloaded."""

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402


def build():
    torch.manual_seed(0)
    from transformers import GPT2Config, GPT2LMHeadModel

    config = GPT2Config(
        n_layer=2,
        n_head=2,
        n_embd=32,
        vocab_size=128,
        n_positions=64,
        bos_token_id=0,
        eos_token_id=1,
        pad_token_id=1,
    )
    model = GPT2LMHeadModel(config).eval()
    input_ids = torch.randint(2, config.vocab_size, (2, 16))
    attention_mask = torch.ones_like(input_ids)
    return model, (), {"input_ids": input_ids, "attention_mask": attention_mask, "use_cache": True}
