"""A tiny Hugging Face Llama causal LM built from a config (random weights, nothing downloaded):
eight identical ``LlamaDecoderLayer`` blocks hold most of the parameters, the shape regional
compilation is for. Called as people call it: ``model(input_ids=..., use_cache=False)``."""

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402


def build():
    torch.manual_seed(0)
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=8,
        num_attention_heads=4,
        num_key_value_heads=4,
        vocab_size=128,
        max_position_embeddings=64,
    )
    model = LlamaForCausalLM(config).eval()
    input_ids = torch.randint(0, config.vocab_size, (2, 16))
    return model, (), {"input_ids": input_ids, "use_cache": False}
