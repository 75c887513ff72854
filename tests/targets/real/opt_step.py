"""PyTorch's "Compiling the optimizer" recipe at a small size: a backward in build() gives the
parameters their ``.grad``, and the target is ``opt.step`` itself (Adam with a tensor learning rate,
so a changed rate does not recompile). The call returns None: what it does is update the parameters
and create Adam's state in place, and that state is what numerics must compare."""

import torch


def build():
    torch.manual_seed(0)
    model = torch.nn.Sequential(*[torch.nn.Linear(64, 64, bias=False) for _ in range(4)])
    model(torch.rand(8, 64)).sum().backward()
    opt = torch.optim.Adam(model.parameters(), lr=torch.tensor(0.01))
    return opt.step, ()
