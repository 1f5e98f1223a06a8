# fixture: an LTR-style trainer feeds the actor's stats dict, which holds the tracked loss tensors, to AverageMeter.update, whose `self.sum += val * n` keeps every batch's graph reachable from the meters in self.stats
# source: https://github.com/visionml/pytracking/pull/313
# expect: TL003 19 torch
# torch: grows
# strict: ok

from collections import OrderedDict

import torch
import torch.nn as nn


class AverageMeter:
    def __init__(self):
        self.avg, self.val, self.sum, self.count = 0, 0, 0, 0

    def update(self, val, n=1):
        self.val = val
        self.sum += val * n
        self.count += n
        self.avg = self.sum / self.count


class Actor:
    def __init__(self, net, objective):
        self.net = net
        self.objective = objective

    def __call__(self, data):
        iou_pred = self.net(data["test_images"])
        loss_iou = self.objective(iou_pred, data["test_iou"])
        loss = 2.0 * loss_iou
        stats = {"Loss/total": loss, "Loss/iou": loss_iou}
        return loss, stats

    def train(self, mode=True):
        self.net.train(mode)


class Loader:
    def __init__(self, name, batches, training, batch_size):
        self.name, self.batches, self.training, self.batch_size = name, batches, training, batch_size

    def __iter__(self):
        return iter(self.batches)


class LTRTrainer:
    def __init__(self, actor, loaders, optimizer):
        self.actor = actor
        self.loaders = loaders
        self.optimizer = optimizer
        self.stats = OrderedDict({loader.name: None for loader in loaders})

    def cycle_dataset(self, loader):
        self.actor.train(loader.training)
        for i, data in enumerate(loader, 1):
            loss, stats = self.actor(data)
            if loader.training:
                self.optimizer.zero_grad()
                loss.backward()
                self.optimizer.step()
            self._update_stats(stats, loader.batch_size, loader)

    def _update_stats(self, new_stats, batch_size, loader):
        if self.stats[loader.name] is None:
            self.stats[loader.name] = OrderedDict({name: AverageMeter() for name in new_stats.keys()})
        for name, val in new_stats.items():
            if name not in self.stats[loader.name].keys():
                self.stats[loader.name][name] = AverageMeter()
            self.stats[loader.name][name].update(val, batch_size)

    def train_epoch(self):
        for loader in self.loaders:
            self.cycle_dataset(loader)


torch.manual_seed(0)
net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
batches = [{"test_images": torch.randn(3, 4), "test_iou": torch.rand(3, 1)} for _ in range(3)]
trainer = LTRTrainer(Actor(net, nn.MSELoss()), [Loader("train", batches, True, 3)],
                     torch.optim.Adam(net.parameters(), lr=1e-3))
trainer.train_epoch()
print({name: float(meter.avg) for name, meter in trainer.stats["train"].items()})
