"""A tiny Hugging Face T5 (encoder-decoder) called with keyword inputs: ~1,300 guards on one frame,
many of them on the config objects' identity. Random weights from a small config; nothing is
downloaded."""

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402

import tcdoctor  # noqa: E402


def model_and_kwargs():
    torch.manual_seed(0)
    from transformers import T5Config, T5Model

    config = T5Config(
        vocab_size=128,
        d_model=32,
        d_kv=16,
        d_ff=64,
        num_layers=1,
        num_decoder_layers=1,
        num_heads=2,
        decoder_start_token_id=0,
        pad_token_id=0,
    )
    ids, dec = torch.randint(1, 128, (2, 12)), torch.randint(1, 128, (2, 8))
    kwargs = {"input_ids": ids, "attention_mask": torch.ones_like(ids), "decoder_input_ids": dec}
    return T5Model(config).eval(), kwargs


def build():
    model, kwargs = model_and_kwargs()
    return tcdoctor.Workload(model, (), kwargs=kwargs)
