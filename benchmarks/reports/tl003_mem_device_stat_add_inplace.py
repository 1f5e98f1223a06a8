# fixture: BERT pretraining keeps its running average loss in a device tensor of a stats object and adds each step's loss into it in place (`.add_(loss)`), so the stat tensor chains every step's graph
# source: https://github.com/NVIDIA/DeepLearningExamples/issues/1102
# expect: TL003 42 torch
# torch: grows
# strict: ok

import torch
import torch.nn as nn
import torch.nn.functional as F


class SyncFreeStats:
    def __init__(self):
        self.host_stats = {}
        self.device_stats = {}

    def add_stat(self, name, dtype=torch.float32, device_tensor=None):
        self.host_stats[name] = torch.zeros(1, dtype=dtype)
        self.device_stats[name] = device_tensor

    def copy_from_device(self):
        for name in self.host_stats.keys():
            if self.device_stats[name] is not None:
                self.host_stats[name].copy_(self.device_stats[name])

    def host_stat_value(self, name):
        return self.host_stats[name].item()

    def device_stat(self, name):
        return self.device_stats[name]


def criterion(prediction_scores, seq_relationship_score, masked_lm_labels, next_sentence_labels):
    masked_lm_loss = F.cross_entropy(prediction_scores.view(-1, prediction_scores.size(-1)), masked_lm_labels.view(-1))
    next_sentence_loss = F.cross_entropy(seq_relationship_score.view(-1, 2), next_sentence_labels.view(-1))
    return masked_lm_loss + next_sentence_loss


def take_training_step(model, batch, stats):
    prediction_scores, seq_relationship_score = model(batch["input_ids"])
    loss = criterion(prediction_scores, seq_relationship_score, batch["labels"], batch["next_sentence_labels"])
    stats.device_stat("average_loss").add_(loss)
    loss.backward()


def take_optimizer_step(optimizer, stats):
    optimizer.step()
    stats.copy_from_device()
    optimizer.zero_grad(set_to_none=True)


class TinyBert(nn.Module):
    def __init__(self, vocab=13, dim=8):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.mlm = nn.Linear(dim, vocab)
        self.nsp = nn.Linear(dim, 2)

    def forward(self, input_ids):
        hidden = torch.tanh(self.embed(input_ids))
        return self.mlm(hidden), self.nsp(hidden[:, 0])


def main():
    torch.manual_seed(0)
    model = TinyBert()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    stats = SyncFreeStats()
    stats.add_stat("average_loss", device_tensor=torch.zeros(1))
    for step in range(3):
        batch = {"input_ids": torch.randint(0, 13, (2, 4)), "labels": torch.randint(0, 13, (2, 4)),
                 "next_sentence_labels": torch.randint(0, 2, (2,))}
        take_training_step(model, batch, stats)
        take_optimizer_step(optimizer, stats)
        print("average_loss", stats.host_stat_value("average_loss") / (step + 1))
    return stats


stats = main()
