import torch


def gate(t, x):
    def _tcd_true_5():
        y = x * 2
        return y

    def _tcd_false_5():
        y = x - 1
        return y

    y = torch.cond(t.double() > 0.1, _tcd_true_5, _tcd_false_5, ())
    return y
