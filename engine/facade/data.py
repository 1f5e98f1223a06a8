"""`torch.utils.data`: datasets, samplers and a DataLoader that batches in-process.

`num_workers` is accepted and ignored: workers fetch the same batches in the same
order. The default generator is drawn from as PyTorch draws from it (measured on
2.13): every iteration of a loader takes a 64-bit base seed for its workers when
it starts, and a shuffling sampler another, on its first batch, which seeds the
private generator its permutation comes from.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from .. import ops, rng
from ..errors import NotSupportedByEngine, only_defaults
from ..tape import Tensor


class Dataset:
    def __getitem__(self, index: int) -> Any:
        raise NotImplementedError("Subclasses of Dataset should implement __getitem__.")

    def __add__(self, other: Dataset) -> ConcatDataset:
        return ConcatDataset([self, other])


class IterableDataset(Dataset):
    def __iter__(self) -> Iterator[Any]:
        raise NotImplementedError


class TensorDataset(Dataset):
    def __init__(self, *tensors: Tensor) -> None:
        if any(t.arr.shape[0] != tensors[0].arr.shape[0] for t in tensors):
            raise AssertionError("Size mismatch between tensors")
        self.tensors = tensors

    def __getitem__(self, index: int) -> tuple:
        return tuple(t[index] for t in self.tensors)

    def __len__(self) -> int:
        return self.tensors[0].arr.shape[0]


class Subset(Dataset):
    def __init__(self, dataset: Dataset, indices: Sequence[int]) -> None:
        self.dataset, self.indices = dataset, list(indices)

    def __getitem__(self, index: int) -> Any:
        return self.dataset[self.indices[index]]

    def __len__(self) -> int:
        return len(self.indices)


class ConcatDataset(Dataset):
    def __init__(self, datasets: Sequence[Dataset]) -> None:
        self.datasets = list(datasets)
        self.cumulative_sizes = list(np.cumsum([len(d) for d in self.datasets]))  # type: ignore[arg-type]

    def __len__(self) -> int:
        return int(self.cumulative_sizes[-1]) if self.cumulative_sizes else 0

    def __getitem__(self, index: int) -> Any:
        if index < 0:
            index += len(self)
        which = int(np.searchsorted(self.cumulative_sizes, index, side="right"))
        start = int(self.cumulative_sizes[which - 1]) if which else 0
        return self.datasets[which][index - start]


def random_split(dataset: Dataset, lengths: Sequence[Any], generator: Any = None) -> list[Subset]:
    only_defaults("torch.utils.data.random_split", generator=generator)
    n = len(dataset)  # type: ignore[arg-type]
    sizes = [int(x) for x in lengths]
    if all(isinstance(x, float) for x in lengths) and abs(sum(lengths) - 1) < 1e-9:
        sizes = [int(np.floor(n * f)) for f in lengths]
        for i in range(n - sum(sizes)):
            sizes[i % len(sizes)] += 1
    if sum(sizes) != n:
        raise ValueError("Sum of input lengths does not equal the length of the input dataset!")
    order = rng.generator().permutation(n)
    out, start = [], 0
    for size in sizes:
        out.append(Subset(dataset, order[start:start + size].tolist()))
        start += size
    return out


def default_collate(batch: list) -> Any:
    """Stack tensors and arrays, make numbers tensors, recurse into tuples and dicts."""
    first = batch[0]
    if isinstance(first, Tensor):
        return ops.stack(batch, 0)
    if isinstance(first, np.ndarray):
        return Tensor(np.stack(batch))
    if isinstance(first, (bool, np.bool_)):
        return Tensor(np.asarray(batch, np.bool_))
    if isinstance(first, (int, np.integer)):
        return Tensor(np.asarray(batch, np.int64))
    if isinstance(first, (float, np.floating)):
        return Tensor(np.asarray(batch, np.float64))
    if isinstance(first, str):
        return list(batch)
    if isinstance(first, dict):
        return {k: default_collate([b[k] for b in batch]) for k in first}
    if isinstance(first, (tuple, list)):
        columns = [default_collate(list(c)) for c in zip(*batch)]
        return tuple(columns) if isinstance(first, tuple) else columns
    raise TypeError(f"default_collate: batch must contain tensors, numpy arrays, numbers, dicts or "
                    f"lists; found {type(first)}")


class SequentialSampler:
    def __init__(self, data_source: Any) -> None:
        self.data_source = data_source

    def __iter__(self) -> Iterator[int]:
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


def _seed_draw() -> int:
    """`torch.empty((), dtype=torch.int64).random_()`: 64 bits (two draws) modulo 2**63."""
    return int(rng.generator().integers(0, 1 << 63, ()))


class RandomSampler(SequentialSampler):
    def __iter__(self) -> Iterator[int]:
        # A generator function, as PyTorch's: the seed is drawn on the first batch.
        yield from rng.TorchGenerator(_seed_draw()).permutation(len(self.data_source)).tolist()


class DataLoader:
    def __init__(self, dataset: Dataset, batch_size: int | None = 1, shuffle: bool | None = None,
                 sampler: Any = None, batch_sampler: Any = None, num_workers: int = 0,
                 collate_fn: Callable[[list], Any] | None = None, pin_memory: bool = False,
                 drop_last: bool = False, timeout: float = 0, worker_init_fn: Any = None,
                 multiprocessing_context: Any = None, generator: Any = None, *,
                 prefetch_factor: Any = None, persistent_workers: bool = False,
                 pin_memory_device: str = "", in_order: bool = True) -> None:
        only_defaults("torch.utils.data.DataLoader", generator=generator, batch_sampler=batch_sampler)
        if isinstance(dataset, IterableDataset):
            raise NotSupportedByEngine("torch.utils.data.DataLoader over an IterableDataset")
        self.dataset, self.batch_size, self.drop_last = dataset, batch_size, drop_last
        self.sampler = sampler if sampler is not None else \
            (RandomSampler(dataset) if shuffle else SequentialSampler(dataset))
        self.collate_fn = collate_fn or (default_collate if batch_size is not None else (lambda x: x))
        self.num_workers = num_workers

    def __iter__(self) -> Iterator[Any]:
        _seed_draw()  # the iterator's base seed for workers, drawn even without them
        return self._batches()

    def _batches(self) -> Iterator[Any]:
        if self.batch_size is None:
            for i in self.sampler:
                yield self.dataset[i]
            return
        batch: list = []
        for i in self.sampler:
            batch.append(self.dataset[i])
            if len(batch) == self.batch_size:
                yield self.collate_fn(batch)
                batch = []
        if batch and not self.drop_last:
            yield self.collate_fn(batch)

    def __len__(self) -> int:
        n = len(self.sampler)
        if self.batch_size is None:
            return n
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)


def __getattr__(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(name)
    raise NotSupportedByEngine(f"torch.utils.data.{name}")
