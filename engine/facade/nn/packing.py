"""`torch.nn.utils.rnn`: padded and packed variable-length sequences.

A `PackedSequence` holds the time steps of a batch sorted by decreasing length,
each step only for the sequences still running (`batch_sizes[t]` of them), as
PyTorch lays it out. The recurrent layers walk it step by step (`rnn.py`);
the graph is built from slices and concatenations, where PyTorch records one
`PackPaddedSequenceBackward0` node (nothing it saves matters for a hazard:
packing saves no tensor either way).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from ... import ops
from ...tape import Tensor

UNSORTED = ("`lengths` array must be sorted in decreasing order when `enforce_sorted` is True. You can "
            "pass `enforce_sorted=False` to pack_padded_sequence and/or pack_sequence to sidestep this "
            "requirement if you do not need ONNX exportability.")


class PackedSequence(NamedTuple):
    data: Tensor
    batch_sizes: Tensor
    sorted_indices: Tensor | None = None
    unsorted_indices: Tensor | None = None

    def steps(self) -> list[int]:
        return [int(b) for b in self.batch_sizes.arr]


def _lengths(lengths: Any) -> np.ndarray:
    arr = lengths.arr if isinstance(lengths, Tensor) else np.asarray(lengths)
    return arr.astype(np.int64).reshape(-1)


def pack_padded_sequence(input: Tensor, lengths: Any, batch_first: bool = False,  # noqa: A002
                         enforce_sorted: bool = True) -> PackedSequence:
    n = _lengths(lengths)
    if enforce_sorted:
        if np.any(np.diff(n) > 0):
            raise RuntimeError(UNSORTED)
        order = None
    else:
        order = np.argsort(-n, kind="stable")
        n = n[order]
        input = ops.index(input, (slice(None), order) if not batch_first else (order,))
    if batch_first:
        input = ops.transpose(input, 0, 1)
    if n.size and n[-1] <= 0:
        raise RuntimeError("Length of all samples has to be greater than 0, but found an element in "
                           "'lengths' that is <= 0")
    sizes = [int((n > t).sum()) for t in range(int(n[0]) if n.size else 0)]
    data = ops.cat([ops.index(input, (t, slice(0, b))) for t, b in enumerate(sizes)], 0)
    sorted_t = None if order is None else Tensor(order.astype(np.int64))
    unsorted_t = None if order is None else Tensor(np.argsort(order).astype(np.int64))
    return PackedSequence(data, Tensor(np.asarray(sizes, np.int64)), sorted_t, unsorted_t)


def pad_packed_sequence(sequence: PackedSequence, batch_first: bool = False, padding_value: float = 0.0,
                        total_length: int | None = None) -> tuple[Tensor, Tensor]:
    sizes = sequence.steps()
    batch, steps = (sizes[0] if sizes else 0), len(sizes)
    if total_length is not None:
        if total_length < steps:
            raise ValueError(f"Expected total_length to be at least the length of the longest sequence "
                             f"in input, but got total_length={total_length} and max sequence length "
                             f"being {steps}")
        steps = total_length
    rows, start = [], 0
    feature = sequence.data.arr.shape[1:]
    for t in range(steps):
        b = sizes[t] if t < len(sizes) else 0
        step = ops.index(sequence.data, (slice(start, start + b),))
        start += b
        if b < batch:
            fill = ops.const(np.full((batch - b, *feature), padding_value, sequence.data.arr.dtype))
            step = ops.cat([step, fill], 0) if b else fill
        rows.append(step)
    padded = ops.stack(rows, 0)
    lengths = np.asarray([sum(1 for s in sizes if s > i) for i in range(batch)], np.int64)
    if sequence.unsorted_indices is not None:
        padded = ops.index(padded, (slice(None), sequence.unsorted_indices.arr))
        lengths = lengths[sequence.unsorted_indices.arr]
    if batch_first:
        padded = ops.transpose(padded, 0, 1)
    return padded, Tensor(lengths)


def pad_sequence(sequences: Sequence[Tensor], batch_first: bool = False, padding_value: float = 0.0,
                 padding_side: str = "right") -> Tensor:
    longest = max(s.arr.shape[0] for s in sequences)
    padded = []
    for s in sequences:
        extra = longest - s.arr.shape[0]
        widths = [0, 0] * (s.arr.ndim - 1) + ([0, extra] if padding_side == "right" else [extra, 0])
        padded.append(ops.pad(s, widths, padding_value) if extra else s)
    return ops.stack(padded, 0 if batch_first else 1)


def pack_sequence(sequences: Sequence[Tensor], enforce_sorted: bool = True) -> PackedSequence:
    lengths = [s.arr.shape[0] for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)
