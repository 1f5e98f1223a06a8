# fixture: the fix merged for the leak: the fine-tuning loop adds `loss.item()` into loss_sum, so the per-epoch total holds no graph
# source: https://github.com/ray-project/ray/pull/40940
# torch: ok
# strict: ok

import contextlib
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class Accelerator:
    """Stands in for accelerate.Accelerator (single process, no mixed precision)."""

    def __init__(self):
        self.device = torch.device("cpu")
        self.is_main_process = True

    def prepare(self, *objects):
        return objects

    @contextlib.contextmanager
    def accumulate(self, model):
        yield

    def backward(self, loss):
        loss.backward()

    def gather(self, tensor):
        return tensor

    def print(self, *args):
        print(*args)


class CausalLM(nn.Module):
    def __init__(self, vocab=10, dim=6):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.lm_head = nn.Linear(dim, vocab)

    def forward(self, input_ids, labels):
        logits = self.lm_head(torch.tanh(self.embed(input_ids)))
        return {"loss": F.cross_entropy(logits.view(-1, logits.size(-1)), labels.view(-1))}


def training_function(config):
    accelerator = Accelerator()
    model, optimizer = accelerator.prepare(CausalLM(), None)
    optimizer = torch.optim.AdamW(model.parameters(), lr=config["lr"])
    for epoch in range(config["num_epochs"]):
        model.train()
        loss_sum = torch.tensor(0.0).to(accelerator.device)
        fwd_time_sum = 0.0
        for step, batch in enumerate(config["train_batches"]):
            with accelerator.accumulate(model):
                s_fwd = time.time()
                outputs = model(**batch)
                loss = outputs["loss"]
                loss_sum += loss.item()
                fwd_time_sum += time.time() - s_fwd
                accelerator.backward(loss)
                optimizer.step()
                optimizer.zero_grad()
            aggregated_loss = torch.mean(accelerator.gather(loss[None])).item()
            accelerator.print(f"[epoch {epoch} step {step}] loss: {aggregated_loss:.4f}")
        metrics = {"epoch": epoch, "train_loss_avg": loss_sum.item() / (step + 1), "fwd_time": fwd_time_sum}
        accelerator.print(metrics)
    return loss_sum


torch.manual_seed(0)
batches = [{"input_ids": torch.randint(0, 10, (2, 4)), "labels": torch.randint(0, 10, (2, 4))} for _ in range(3)]
last_loss_sum = training_function({"lr": 1e-3, "num_epochs": 2, "train_batches": batches})
