"""A tiny Hugging Face BERT classifier trained one step at a time: keyword inputs, dropout active
(``model.train()``), cross-entropy on ``output.logits``, AdamW with a plain float learning rate (as
people write it). Random weights from a small config; nothing is downloaded."""

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import tcdoctor  # noqa: E402


def loss_fn(output, targets):
    return F.cross_entropy(output.logits, targets)


def build():
    torch.manual_seed(0)
    from transformers import BertConfig, BertForSequenceClassification

    config = BertConfig(
        vocab_size=128,
        hidden_size=32,
        num_hidden_layers=1,  # one encoder layer: dropout, keyword inputs and AdamW all show
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=64,
        num_labels=3,
        hidden_dropout_prob=0.1,
        attention_probs_dropout_prob=0.1,
        pad_token_id=0,
    )
    model = BertForSequenceClassification(config).train()
    input_ids = torch.randint(1, config.vocab_size, (4, 16))
    attention_mask = torch.ones_like(input_ids)
    labels = torch.randint(0, config.num_labels, (4,))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    return tcdoctor.TrainStep(
        model,
        (),
        kwargs={"input_ids": input_ids, "attention_mask": attention_mask},
        targets=labels,
        loss_fn=loss_fn,
        optimizer=optimizer,
    )
