"""torch's own ``nn.TransformerEncoder`` called with a causal mask, in eval/no_grad. The graph break is
inside torch: ``_detect_is_causal_mask`` turns ``(mask == causal_comparison).all()`` into a Python
bool (torch/nn/modules/transformer.py). The user's line that leads there is marked ``# CALL SITE``."""

import torch
from torch import nn


class CausalEncoder(nn.Module):
    def __init__(self, vocab=64, d_model=32, nhead=2, layers=2):
        super().__init__()
        self.embed = nn.Embedding(vocab, d_model)
        layer = nn.TransformerEncoderLayer(
            d_model, nhead, dim_feedforward=64, dropout=0.1, batch_first=True
        )
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = nn.Linear(d_model, vocab)

    def forward(self, tokens):
        x = self.embed(tokens)
        mask = nn.Transformer.generate_square_subsequent_mask(tokens.size(1))
        h = self.encoder(x, mask=mask)  # CALL SITE
        return self.head(h)


def build():
    torch.manual_seed(0)
    model = CausalEncoder().eval()
    return model, (torch.randint(0, 64, (2, 16)),)
