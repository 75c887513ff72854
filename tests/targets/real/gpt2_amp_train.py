"""A GPT-2 language-model training step written by its user: ``model(**batch, labels=...)`` under
bf16 autocast, backward and AdamW in the user's own step function. Random weights from a small
config; nothing is downloaded. Its graph breaks are in transformers and PyTorch, not the user's."""

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402

import tcdoctor  # noqa: E402


def train_step(model, optimizer, inputs, targets):
    (batch,) = inputs
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss = model(**batch, labels=targets).loss
    loss.backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return loss.detach()


def build():
    torch.manual_seed(0)
    from transformers import GPT2Config, GPT2LMHeadModel

    config = GPT2Config(
        vocab_size=128,
        n_positions=64,
        n_embd=32,
        n_layer=1,  # one block: its breaks (transformers, PyTorch) and the AMP step all show
        n_head=2,
        resid_pdrop=0.0,
        embd_pdrop=0.0,
        attn_pdrop=0.0,
    )
    model = GPT2LMHeadModel(config).train()
    ids = torch.randint(0, config.vocab_size, (4, 16))
    batch = {"input_ids": ids, "attention_mask": torch.ones_like(ids)}
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    return tcdoctor.TrainStep(model, (batch,), targets=ids, optimizer=opt, train_step=train_step)
