import torch


def route(x, scale):
    a = x * scale
    b = x + 1

    def _tcd_true_7(a, b):
        a = a * 2
        b = torch.tanh(b)
        return a, b

    def _tcd_false_7(a, b):
        b = b - x
        return a.clone(), b

    a, b = torch.cond(x.mean() > 0, _tcd_true_7, _tcd_false_7, (a, b))
    return a + b
