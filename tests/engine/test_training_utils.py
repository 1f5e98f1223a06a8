"""RMSprop, Adagrad, the lr schedulers and torch.utils.data against PyTorch."""

from __future__ import annotations

import numpy as np
import pytest

from tapelint_engine import facade as E

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("name, kw", [
    ("RMSprop", dict(lr=0.01)), ("RMSprop", dict(lr=0.01, momentum=0.9, centered=True, weight_decay=0.1)),
    ("Adagrad", dict(lr=0.1)), ("Adagrad", dict(lr=0.1, lr_decay=0.01, weight_decay=0.1,
                                                initial_accumulator_value=0.5)),
    ("Adam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True)),
])
def test_optimizers_agree(fresh, name: str, kw: dict) -> None:
    w0 = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)
    results = []
    for L in (torch, E):
        p = L.tensor(w0, requires_grad=True)
        opt = getattr(L.optim, name)([p], **kw)
        for _ in range(4):
            opt.zero_grad()
            ((p * p).sum() + p.exp().sum()).backward()
            opt.step()
        results.append(p.detach().numpy().copy())
    np.testing.assert_allclose(results[1], results[0], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("make", [
    lambda S, o: S.StepLR(o, 2, 0.5), lambda S, o: S.MultiStepLR(o, [1, 4], 0.3),
    lambda S, o: S.ExponentialLR(o, 0.9), lambda S, o: S.CosineAnnealingLR(o, 5, 0.01),
    lambda S, o: S.LambdaLR(o, lambda e: 1 / (e + 1)), lambda S, o: S.LinearLR(o, 0.25, 1.0, 4),
])
def test_schedulers_agree(fresh, make) -> None:
    lrs = []
    for L in (torch, E):
        opt = L.optim.SGD([L.ones(2, requires_grad=True)], lr=0.1)
        sched = make(L.optim.lr_scheduler, opt)
        seen = [opt.param_groups[0]["lr"]]
        for _ in range(7):
            opt.step()
            sched.step()
            seen.append(sched.get_last_lr()[0])
        lrs.append(seen)
    np.testing.assert_allclose(lrs[1], lrs[0], rtol=1e-9)


def test_reduce_on_plateau_agrees(fresh) -> None:
    losses = [1.0, 0.9, 0.95, 0.97, 0.99, 0.98, 0.5, 0.6, 0.7, 0.8, 0.9]
    lrs = []
    for L in (torch, E):
        opt = L.optim.SGD([L.ones(2, requires_grad=True)], lr=0.1)
        sched = L.optim.lr_scheduler.ReduceLROnPlateau(opt, factor=0.5, patience=2, cooldown=1)
        lrs.append([(sched.step(v), opt.param_groups[0]["lr"])[1] for v in losses])
    assert lrs[0] == lrs[1]


def test_dataloader_batches_like_pytorch(fresh) -> None:
    x = np.arange(20, dtype=np.float32).reshape(10, 2)
    y = np.arange(10)
    batches = []
    for L in (torch, E):
        data = L.utils.data
        ds = data.TensorDataset(L.tensor(x), L.tensor(y))
        loader = data.DataLoader(ds, batch_size=4, shuffle=False)
        batches.append([(xb.numpy().tolist(), yb.numpy().tolist()) for xb, yb in loader])
        assert len(loader) == 3 and len(data.DataLoader(ds, batch_size=4, drop_last=True)) == 2
    assert batches[0] == batches[1]


def test_custom_dataset_collates_numbers_and_dicts(fresh) -> None:
    out = []
    for L in (torch, E):
        class Pairs(L.utils.data.Dataset):
            library = L  # bound now: the loader calls __getitem__ before the loop moves on, but say so

            def __len__(self):
                return 5

            def __getitem__(self, i):
                return {"x": self.library.full((2,), float(i)), "label": i, "w": 0.5 * i}

        batch = next(iter(L.utils.data.DataLoader(Pairs(), batch_size=3)))
        out.append({k: (v.numpy().tolist(), str(v.dtype)) for k, v in batch.items()})
    assert out[0] == out[1]


def test_shuffle_and_split_cover_every_item(fresh) -> None:
    data = E.utils.data
    ds = data.TensorDataset(E.arange(10))
    seen = sorted(int(v) for (b,) in data.DataLoader(ds, batch_size=3, shuffle=True) for v in b.numpy())
    assert seen == list(range(10))
    a, b = data.random_split(ds, [7, 3])
    assert sorted(a.indices + b.indices) == list(range(10)) and (len(a), len(b)) == (7, 3)
