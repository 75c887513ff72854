"""Only one child compiles cleanly: `body` is pure tensor math (fuses well), `head` logs with print()
three times, so the whole model has three graph breaks and tcdoctor tries compiling each child alone."""

import torch
from torch import nn


class Body(nn.Module):
    def forward(self, x):
        for _ in range(30):
            x = torch.sin(x) * 0.9 + 0.1
        return x


class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(256, 8)

    def forward(self, x):
        print("head input", tuple(x.shape))
        x = self.proj(x)
        print("logits ready")
        x = torch.softmax(x, dim=-1)
        print("done")
        return x


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = Body()
        self.head = Head()

    def forward(self, x):
        return self.head(self.body(x))


def build():
    torch.manual_seed(0)
    return Model().eval(), (torch.randn(4, 256),)
