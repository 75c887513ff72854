"""A module whose forward steps its own optimizer and LR scheduler: the example in PyTorch's "Dealing
with Recompilations" docs (torch.compile programming model). The learning rate is a Python float that
the scheduler changes on every call, so the compiled ``Adam.step`` guards on its exact value
(``L['self'].param_groups[0]['lr'] == 0.01``) and recompiles. Five calls with the same inputs."""

import torch

import tcdoctor


class SelfTraining(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(3, 3)
        self.opt = torch.optim.Adam(self.linear.parameters(), lr=0.01)
        self.sched = torch.optim.lr_scheduler.ExponentialLR(self.opt, 0.9)

    def forward(self, inp):
        self.opt.zero_grad(True)
        out = self.linear(inp).sum()
        out.backward()
        self.opt.step()
        self.sched.step()
        return out


def build():
    torch.manual_seed(0)
    model = SelfTraining()
    inputs = (torch.ones(3, 3),)
    return tcdoctor.Workload(model, inputs, variants=[inputs] * 4, grad=True)
