# fixture: the Trainer fix from the thread: training_step returns `loss.detach()`, so the running tensor total tr_loss holds no graph
# source: https://github.com/huggingface/transformers/pull/6999
# torch: ok
# strict: ok

import torch
import torch.nn as nn
import torch.nn.functional as F


class MaskedLM(nn.Module):
    def __init__(self, vocab=11, dim=6):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.head = nn.Linear(dim, vocab)

    def forward(self, input_ids, labels):
        logits = self.head(torch.tanh(self.embed(input_ids)))
        loss = F.cross_entropy(logits.view(-1, logits.size(-1)), labels.view(-1))
        return (loss, logits)


class Trainer:
    def __init__(self, model, train_dataset, gradient_accumulation_steps=1, logging_steps=2):
        self.model = model
        self.train_dataset = train_dataset
        self.gradient_accumulation_steps = gradient_accumulation_steps
        self.logging_steps = logging_steps
        self.optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
        self.global_step = 0

    def training_step(self, model, inputs):
        model.train()
        outputs = model(**inputs)
        loss = outputs[0]
        if self.gradient_accumulation_steps > 1:
            loss = loss / self.gradient_accumulation_steps
        loss.backward()
        return loss.detach()

    def train(self, num_train_epochs=2):
        model = self.model
        tr_loss = torch.tensor(0.0)
        logging_loss_scalar = 0.0
        for epoch in range(num_train_epochs):
            for step, inputs in enumerate(self.train_dataset):
                tr_loss += self.training_step(model, inputs)
                if (step + 1) % self.gradient_accumulation_steps == 0:
                    self.optimizer.step()
                    model.zero_grad()
                    self.global_step += 1
                    if self.global_step % self.logging_steps == 0:
                        tr_loss_scalar = tr_loss.item()
                        print("loss", (tr_loss_scalar - logging_loss_scalar) / self.logging_steps)
                        logging_loss_scalar = tr_loss_scalar
        return self.global_step, tr_loss / self.global_step


torch.manual_seed(0)
dataset = [{"input_ids": torch.randint(0, 11, (2, 5)), "labels": torch.randint(0, 11, (2, 5))} for _ in range(3)]
trainer = Trainer(MaskedLM(), dataset)
global_step, train_loss = trainer.train()
print(global_step, float(train_loss))
