"""The engine's random stream (`torch.manual_seed` reseeds it).

Values differ from PyTorch's generator; runs are reproducible, not identical.
"""

from __future__ import annotations

import numpy as np

GEN = np.random.default_rng(0)


def manual_seed(seed: int) -> None:
    global GEN
    GEN = np.random.default_rng(int(seed))


def generator() -> np.random.Generator:
    return GEN
