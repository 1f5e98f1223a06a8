# fixture: the merged fix: the trainer replaces the dict's 'loss' by `output['loss'].detach()` before appending it to `outputs`
# source: https://github.com/TRI-ML/packnet-sfm/pull/51
# torch: ok
# strict: ok

import torch
import torch.nn as nn
import torch.nn.functional as F


class DepthNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(6, 10), nn.ReLU(), nn.Linear(10, 1))

    def forward(self, rgb):
        return F.softplus(self.net(rgb))


class ModelWrapper(nn.Module):
    def __init__(self):
        super().__init__()
        self.depth_net = DepthNet()
        self.current_epoch = 0

    def training_step(self, batch, *args):
        depth = self.depth_net(batch["rgb"])
        photometric_loss = (depth - batch["depth"]).abs().mean()
        smoothness_loss = 0.1 * depth.pow(2).mean()
        return {
            "loss": photometric_loss + smoothness_loss,
            "metrics": {"photometric_loss": photometric_loss.item(), "smoothness_loss": smoothness_loss.item()},
        }

    def training_epoch_end(self, output_batch):
        avg_train_loss = torch.stack([x["loss"] for x in output_batch]).mean()
        return {"avg_train-loss": avg_train_loss}


class HorovodTrainer:
    def __init__(self, max_epochs=2):
        self.max_epochs = max_epochs

    def avg_loss(self, value):
        return value

    def train(self, dataloader, module, optimizer):
        module.train()
        outputs = []
        for i, batch in enumerate(dataloader):
            optimizer.zero_grad()
            output = module.training_step(batch, i)
            output["loss"].backward()
            optimizer.step()
            output["loss"] = output["loss"].detach()
            outputs.append(output)
            print("Epoch {} | Avg.Loss {:.4f}".format(module.current_epoch, self.avg_loss(output["loss"].item())))
        return module.training_epoch_end(outputs)

    def fit(self, module, dataloader):
        optimizer = torch.optim.Adam(module.parameters(), lr=2e-4)
        for epoch in range(self.max_epochs):
            output = self.train(dataloader, module, optimizer)
            print("epoch", epoch, "avg loss", output["avg_train-loss"].item())
            module.current_epoch += 1
        return output


torch.manual_seed(0)
dataloader = [{"rgb": torch.randn(4, 6), "depth": torch.rand(4, 1)} for _ in range(3)]
last_output = HorovodTrainer().fit(ModelWrapper(), dataloader)
