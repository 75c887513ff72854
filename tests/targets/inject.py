"""A model whose source line, print text and names carry HTML/JS: the report must show them as text."""

import torch


class Model(torch.nn.Module):
    def forward(self, x):
        x = x + 1
        print("<script>document.title='PWNED'</script><img src=x onerror=\"document.title='PWNED'\">")  # fmt: skip
        return x * 2


def build():
    return Model(), (torch.randn(4),)
