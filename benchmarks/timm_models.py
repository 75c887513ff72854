"""timm models (random weights, eval mode, one 1x3x224x224 image): issue 13's conv nets and ViT.

`build` is ResNet-18 (the conv net of issue 13's bias report), `build_vit_tiny` ViT-Tiny/16,
`build_mobilenetv3` MobileNetV3-Large.

timm imports torchvision and PIL at import time, and the torchvision wheel for torch 2.13 on this index
does not import on CPU. Run with `PYTHONPATH=benchmarks/shim` (placeholders for torchvision/PIL that
raise if anything is built from them; these models build none) after `pip install --no-deps timm`
(no torch resolution). Example:

    PYTHONPATH=benchmarks/shim python benchmarks/real_overhead.py --runs 3 --budget 5 \\
        benchmarks/timm_models.py:build benchmarks/timm_models.py:build_vit_tiny
"""

from __future__ import annotations

import timm
import torch


def _build(name: str):
    model = timm.create_model(name, pretrained=False).eval()
    return model, (torch.randn(1, 3, 224, 224),)


def build():
    return _build("resnet18")


def build_vit_tiny():
    return _build("vit_tiny_patch16_224")


def build_mobilenetv3():
    return _build("mobilenetv3_large_100")
