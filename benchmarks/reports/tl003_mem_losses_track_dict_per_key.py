# fixture: a semantic scene completion trainer hands the model's dict of losses to a LossesTrackEpoch object, whose update_train_losses does `self.train_losses[key] += loss[key]` for every key, keeping each batch's graph until the epoch ends
# source: https://github.com/jokester-zzz/SSA-SC/issues/2
# expect: TL003 23 torch
# torch: grows
# strict: ok

import torch
import torch.nn as nn
import torch.nn.functional as F


class LossesTrackEpoch:
    def __init__(self):
        self.train_losses = {}
        self.train_iteration_counts = 0

    def set_train_losses(self, keys):
        for key in keys:
            self.train_losses[key] = 0

    def update_train_losses(self, loss):
        for key in loss:
            self.train_losses[key] += loss[key]
        self.train_iteration_counts += 1

    def restart_train_losses(self):
        for key in self.train_losses.keys():
            self.train_losses[key] = 0
        self.train_iteration_counts = 0


class Metrics:
    def __init__(self):
        self.losses_track = LossesTrackEpoch()


class SSCNet(nn.Module):
    def __init__(self, nbr_classes=4):
        super().__init__()
        self.encoder = nn.Linear(6, 8)
        self.heads = nn.ModuleDict({"1_1": nn.Linear(8, nbr_classes), "1_2": nn.Linear(8, nbr_classes)})

    def forward(self, data):
        feat = F.relu(self.encoder(data["occupancy"]))
        return {scale: head(feat) for scale, head in self.heads.items()}

    def get_train_loss_keys(self):
        return ["total", "semantic_1_1", "semantic_1_2"]

    def compute_loss(self, scores, data):
        loss_1_1 = F.cross_entropy(scores["1_1"], data["label_1_1"])
        loss_1_2 = F.cross_entropy(scores["1_2"], data["label_1_2"])
        return {"total": loss_1_1 + loss_1_2, "semantic_1_1": loss_1_1, "semantic_1_2": loss_1_2}


def train(model, optimizer, dset, nbr_epochs):
    metrics = Metrics()
    metrics.losses_track.set_train_losses(model.get_train_loss_keys())
    for epoch in range(1, nbr_epochs + 1):
        metrics.losses_track.restart_train_losses()
        model.train()
        for t, data in enumerate(dset):
            scores = model(data)
            loss = model.compute_loss(scores, data)
            optimizer.zero_grad()
            loss["total"].backward()
            optimizer.step()
            metrics.losses_track.update_train_losses(loss)
        epoch_loss = metrics.losses_track.train_losses["total"] / metrics.losses_track.train_iteration_counts
        print("=> [Epoch {} - Total Train Loss = {}]".format(epoch, epoch_loss))
    return metrics


torch.manual_seed(0)
model = SSCNet()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
dset = [{"occupancy": torch.randn(5, 6), "label_1_1": torch.randint(0, 4, (5,)), "label_1_2": torch.randint(0, 4, (5,))}
        for _ in range(3)]
metrics = train(model, optimizer, dset, nbr_epochs=1)
