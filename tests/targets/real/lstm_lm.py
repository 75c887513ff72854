"""A word language model in the style of PyTorch's examples/word_language_model (RNNModel, LSTM):
Embedding -> dropout -> 2-layer nn.LSTM -> dropout -> Linear decoder, in eval mode. Input is token ids
shaped (seq_len, batch); the output is the log-probabilities and the (h, c) hidden state tuple."""

import torch
import torch.nn.functional as F
from torch import nn


class RNNModel(nn.Module):
    def __init__(self, ntoken=200, ninp=32, nhid=32, nlayers=2, dropout=0.2):
        super().__init__()
        self.ntoken = ntoken
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(ntoken, ninp)
        self.rnn = nn.LSTM(ninp, nhid, nlayers, dropout=dropout)
        self.decoder = nn.Linear(nhid, ntoken)
        self.nhid = nhid
        self.nlayers = nlayers
        self.init_weights()

    def init_weights(self):
        initrange = 0.1
        nn.init.uniform_(self.encoder.weight, -initrange, initrange)
        nn.init.zeros_(self.decoder.bias)
        nn.init.uniform_(self.decoder.weight, -initrange, initrange)

    def forward(self, input, hidden):
        emb = self.drop(self.encoder(input))
        output, hidden = self.rnn(emb, hidden)
        output = self.drop(output)
        decoded = self.decoder(output)
        decoded = decoded.view(-1, self.ntoken)
        return F.log_softmax(decoded, dim=1), hidden

    def init_hidden(self, bsz):
        weight = next(self.parameters())
        return (
            weight.new_zeros(self.nlayers, bsz, self.nhid),
            weight.new_zeros(self.nlayers, bsz, self.nhid),
        )


def build():
    torch.manual_seed(0)
    model = RNNModel().eval()
    seq_len, batch = 16, 4
    tokens = torch.randint(0, model.ntoken, (seq_len, batch))
    return model, (tokens, model.init_hidden(batch))
