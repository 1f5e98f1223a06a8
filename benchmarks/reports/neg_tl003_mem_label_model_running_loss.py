# fixture: the label model's fix: `running_loss += loss.item()` keeps a float, so each batch's graph dies with its iteration
# source: https://github.com/BatsResearch/labelmodels/issues/4
# torch: ok
# strict: ok

import torch
import torch.nn as nn


class LearningConfig:
    def __init__(self):
        self.epochs = 2
        self.step_size = 0.01
        self.momentum = 0.9


class LabelModel(nn.Module):
    def __init__(self, num_classes, num_lfs, init_acc, acc_prior):
        super().__init__()
        self.accuracy = nn.Parameter(torch.full((num_lfs, num_classes), init_acc))
        self.propensity = nn.Parameter(torch.zeros(num_lfs))
        self.init_acc = init_acc
        self.acc_prior = acc_prior

    def forward(self, votes):
        # log-likelihood of each example's votes, one value per example
        scores = votes @ (self.accuracy + self.propensity.unsqueeze(1))
        return torch.logsumexp(scores, dim=1)

    def _get_regularization_loss(self):
        return self.acc_prior * torch.norm(self.accuracy - self.init_acc)

    def estimate_label_model(self, votes, config=None):
        config = config if config is not None else LearningConfig()
        batches = [(votes[i:i + 4],) for i in range(0, votes.shape[0], 4)]
        return self._do_estimate_label_model(batches, config)

    def _do_estimate_label_model(self, batches, config):
        optimizer = torch.optim.SGD(self.parameters(), lr=config.step_size, momentum=config.momentum)
        for epoch in range(config.epochs):
            self.train()
            running_loss = 0.0
            for i_batch, inputs in enumerate(batches):
                optimizer.zero_grad()
                log_likelihood = self(*inputs)
                loss = -1 * torch.mean(log_likelihood)
                loss += self._get_regularization_loss()
                loss.backward()
                optimizer.step()
                running_loss += loss.item()
            epoch_loss = running_loss / len(batches)
            print("Train Loss: %.6f" % epoch_loss)
        return epoch_loss


torch.manual_seed(0)
votes = torch.randint(0, 2, (12, 5)).float()
model = LabelModel(num_classes=2, num_lfs=5, init_acc=0.7, acc_prior=0.025)
final_loss = model.estimate_label_model(votes)
print("final", float(final_loss))
