"""An LSTM tagger: Dynamo does not trace nn.LSTM by default (`allow_rnn=False`), so the frame breaks at
the LSTM call; `torch._dynamo.config.allow_rnn = True` lets it trace through (tcdoctor tries it)."""

import torch
from torch import nn


class Tagger(nn.Module):
    def __init__(self, vocab=100, dim=32, tags=5):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.lstm = nn.LSTM(dim, dim, batch_first=True)
        self.out = nn.Linear(dim, tags)

    def forward(self, tokens):
        h, _ = self.lstm(self.emb(tokens))
        return self.out(h).log_softmax(-1)


def build():
    torch.manual_seed(0)
    return Tagger().eval(), (torch.randint(0, 100, (4, 12)),)
