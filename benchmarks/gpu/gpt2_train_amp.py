"""The 'torch.compile Benchmarked' article's setup, scaled down: a GPT-2 (from its config, no download)
trained with AdamW under CUDA autocast; 4 layers, width 512, 8 x 256 tokens."""

import torch
from transformers import GPT2Config, GPT2LMHeadModel

import tcdoctor

DEV = "cuda" if torch.cuda.is_available() else "cpu"


def build():
    torch.manual_seed(0)
    cfg = GPT2Config(n_layer=4, n_embd=512, n_head=8, n_positions=256, vocab_size=50257)
    model = GPT2LMHeadModel(cfg).to(DEV).train()
    opt = torch.optim.AdamW(
        model.parameters(),
        lr=torch.tensor(1e-4, device=DEV) if DEV == "cuda" else 1e-4,
        capturable=DEV == "cuda",
    )
    ids = torch.randint(0, 50257, (8, 256), device=DEV)

    def loss_fn(out, targets):
        return out.loss

    return tcdoctor.TrainStep(
        model,
        (),
        kwargs={"input_ids": ids, "labels": ids},
        targets=None,
        loss_fn=loss_fn,
        optimizer=opt,
        autocast=torch.bfloat16,
    )
