"""Inference on CUDA: a stack of transformer encoder layers (fp32), batch 32 x 128 tokens."""

import torch
from torch import nn

DEV = "cuda" if torch.cuda.is_available() else "cpu"


def build():
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(
        d_model=256, nhead=8, dim_feedforward=1024, batch_first=True, norm_first=True
    )
    model = nn.TransformerEncoder(layer, num_layers=4, enable_nested_tensor=False).to(DEV).eval()
    x = torch.randn(32, 128, 256, device=DEV)
    return model, (x,)
