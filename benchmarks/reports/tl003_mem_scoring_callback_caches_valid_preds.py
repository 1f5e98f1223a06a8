# fixture: a skorch-style net runs validation_step without no_grad and notifies its callbacks; an EpochScoring callback caches every validation batch's y_pred (`self.y_preds_.append(y_pred)`) for the epoch-end score, so every batch's graph stays alive
# source: https://github.com/skorch-dev/skorch/issues/218
# expect: TL003 33 torch strict
# missed: the callbacks now run (`getattr(cb, method_name)(self, **cb_kwargs)` with the method named by `notify`'s literal argument, `**step` bound key by key), but what the validation loop keeps is the model's predictions, not a loss: an evaluation loop's retention is reported only for a loss-like value that is only reported after the loop, and the cached predictions are computed with (`torch.cat(self.y_preds_).argmax(1)`)
# torch: grows
# strict: grows

import torch
import torch.nn as nn
import torch.nn.functional as F


class EpochScoring:
    def __init__(self, name, on_train=False):
        self.name = name
        self.on_train = on_train

    def _initialize_cache(self):
        self.y_trues_ = []
        self.y_preds_ = []

    def initialize(self):
        self._initialize_cache()
        return self

    def on_epoch_begin(self, net, **kwargs):
        self._initialize_cache()

    def on_batch_end(self, net, y, y_pred, training, **kwargs):
        if training != self.on_train:
            return
        self.y_trues_.append(y)
        self.y_preds_.append(y_pred)

    def on_epoch_end(self, net, **kwargs):
        y_pred = torch.cat(self.y_preds_).argmax(1)
        y_true = torch.cat(self.y_trues_)
        net.history[-1][self.name] = (y_pred == y_true).float().mean().item()

    def on_batch_begin(self, net, **kwargs):
        pass


class NeuralNetClassifier:
    def __init__(self, module, max_epochs=2, lr=0.1, callbacks=()):
        self.module = module
        self.max_epochs = max_epochs
        self.lr = lr
        self.callbacks = list(callbacks)

    def initialize(self):
        self.module_ = self.module
        self.optimizer_ = torch.optim.SGD(self.module_.parameters(), lr=self.lr)
        self.callbacks_ = [cb.initialize() for cb in self.callbacks]
        self.history = []
        return self

    def notify(self, method_name, **cb_kwargs):
        for cb in self.callbacks_:
            getattr(cb, method_name)(self, **cb_kwargs)

    def infer(self, x):
        return self.module_(x)

    def get_loss(self, y_pred, y_true, training=False):
        return F.nll_loss(torch.log_softmax(y_pred, dim=1), y_true)

    def train_step(self, Xi, yi):
        self.module_.train()
        self.optimizer_.zero_grad()
        y_pred = self.infer(Xi)
        loss = self.get_loss(y_pred, yi, training=True)
        loss.backward()
        self.optimizer_.step()
        return {"loss": loss, "y_pred": y_pred}

    def validation_step(self, Xi, yi):
        self.module_.eval()
        y_pred = self.infer(Xi)
        loss = self.get_loss(y_pred, yi, training=False)
        return {"loss": loss, "y_pred": y_pred}

    def fit_loop(self, dataset_train, dataset_valid):
        for _ in range(self.max_epochs):
            self.history.append({})
            self.notify("on_epoch_begin")
            for Xi, yi in dataset_train:
                self.notify("on_batch_begin", X=Xi, y=yi, training=True)
                step = self.train_step(Xi, yi)
                self.history[-1].setdefault("train_loss", []).append(step["loss"].item())
                self.notify("on_batch_end", X=Xi, y=yi, training=True, **step)
            for Xi, yi in dataset_valid:
                self.notify("on_batch_begin", X=Xi, y=yi, training=False)
                step = self.validation_step(Xi, yi)
                self.history[-1].setdefault("valid_loss", []).append(step["loss"].item())
                self.notify("on_batch_end", X=Xi, y=yi, training=False, **step)
            self.notify("on_epoch_end")
        return self


torch.manual_seed(0)
train_data = [(torch.randn(4, 5), torch.randint(0, 3, (4,))) for _ in range(2)]
valid_data = [(torch.randn(4, 5), torch.randint(0, 3, (4,))) for _ in range(3)]
net = NeuralNetClassifier(nn.Sequential(nn.Linear(5, 8), nn.ReLU(), nn.Linear(8, 3)),
                          callbacks=[EpochScoring("valid_acc")]).initialize()
net.fit_loop(train_data, valid_data)
print(net.history[-1]["valid_acc"])
