"""A graph_break() imported by name, alone in a debug block: the block keeps a pass."""

from torch import nn
from torch._dynamo import graph_break


class Model(nn.Module):
    def __init__(self, debug=False):
        super().__init__()
        self.debug = debug
        self.a = nn.Linear(32, 32)
        self.b = nn.Linear(32, 32)

    def forward(self, x):
        h = self.a(x)
        if self.debug:
            # split here to look at the first graph alone
            graph_break()  # remove before shipping
        return self.b(h)
