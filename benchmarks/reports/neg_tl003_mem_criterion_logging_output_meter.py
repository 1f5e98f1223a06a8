# fixture: the fix from the thread: the criterion's logging_output carries `loss.data`, so the metrics meter sums tensors without a graph
# source: https://github.com/facebookresearch/fairseq/issues/2255
# torch: ok
# strict: ok

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class AverageMeter:
    def __init__(self):
        self.val = None
        self.sum = 0
        self.count = 0

    def update(self, val, n=1):
        self.val = val
        self.sum += val * n
        self.count += n

    @property
    def avg(self):
        return self.sum / self.count


_aggregators = {}


def log_scalar(key, value, weight=1):
    if key not in _aggregators:
        _aggregators[key] = AverageMeter()
    _aggregators[key].update(value, weight)


class MaskedLmLoss:
    def __init__(self, padding_idx=0):
        self.padding_idx = padding_idx

    def __call__(self, model, sample):
        masked_tokens = sample["target"].ne(self.padding_idx)
        sample_size = int(masked_tokens.sum())
        logits = model(sample["net_input"])[masked_tokens]
        targets = sample["target"][masked_tokens]
        loss = F.cross_entropy(logits, targets, reduction="sum")
        logging_output = {
            "loss": loss.data,
            "ntokens": sample["ntokens"],
            "sample_size": sample_size,
        }
        return loss, sample_size, logging_output

    @staticmethod
    def reduce_metrics(logging_outputs):
        loss_sum = sum(log.get("loss", 0) for log in logging_outputs)
        sample_size = sum(log.get("sample_size", 0) for log in logging_outputs)
        log_scalar("loss", loss_sum / sample_size / math.log(2), sample_size)


class Trainer:
    def __init__(self, model, criterion):
        self.model = model
        self.criterion = criterion
        self.optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)

    def train_step(self, samples):
        self.model.train()
        self.optimizer.zero_grad()
        logging_outputs = []
        for sample in samples:
            loss, sample_size, logging_output = self.criterion(self.model, sample)
            loss.backward()
            logging_outputs.append(logging_output)
        self.optimizer.step()
        self.criterion.reduce_metrics(logging_outputs)


class TinyLM(nn.Module):
    def __init__(self, vocab=9, dim=6):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.out = nn.Linear(dim, vocab)

    def forward(self, tokens):
        return self.out(torch.tanh(self.embed(tokens)))


torch.manual_seed(0)
trainer = Trainer(TinyLM(), MaskedLmLoss())
for update in range(3):
    sample = {"net_input": torch.randint(1, 9, (2, 5)), "target": torch.randint(0, 9, (2, 5)), "ntokens": 10}
    trainer.train_step([sample])
    print("update", update, "loss", float(_aggregators["loss"].avg))
