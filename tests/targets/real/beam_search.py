"""A hand-written beam search over Python lists (issue 56 item 5's held-out case): a small decoder
step scores each beam's next token, `topk` picks the best, and its values and indices are read back
through `.tolist()` on float scores to extend the beams, which are Python lists of token ids.

The `.tolist()` inside the loop is a graph break in a loop: Dynamo skips the whole `forward` and it
runs eagerly. No mechanical patch keeps the computation (the lists drive Python), and PyTorch's hint
for `.tolist()` ("ensure the input tensor to `tolist()` is an integer type") cannot apply: the
scores are floats. Inputs are seeded, so every call runs the same steps."""

import torch
from torch import nn

VOCAB = 48
HIDDEN = 32
BEAMS = 3
STEPS = 6


class BeamDecoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, HIDDEN)
        self.cell = nn.Linear(2 * HIDDEN, HIDDEN)
        self.out = nn.Linear(HIDDEN, VOCAB)

    def forward(self, context):
        beams = [([0], 0.0)]  # (tokens, log-probability), as Python lists and floats
        for _ in range(STEPS):
            candidates = []
            for tokens, score in beams:
                last = self.embed(torch.tensor(tokens[-1:]))
                h = torch.tanh(self.cell(torch.cat([last, context], dim=1)))
                logp = torch.log_softmax(self.out(h), dim=-1)[0]
                values, indices = logp.topk(BEAMS)
                for v, i in zip(values.tolist(), indices.tolist()):
                    candidates.append((tokens + [i], score + v))
            candidates.sort(key=lambda c: c[1], reverse=True)
            beams = candidates[:BEAMS]
        return torch.tensor([t for t, _ in beams]), torch.tensor([s for _, s in beams])


def build():
    torch.manual_seed(0)
    return BeamDecoder().eval(), (torch.randn(1, HIDDEN),)
