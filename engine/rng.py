"""PyTorch's CPU generator, value for value: `torch.manual_seed(s)` seeds an mt19937
(numpy's, with the classic integer seeding), and the samplers draw from it as
PyTorch's CPU kernels do (measured against torch 2.13):

* uniform floats take the low 24 bits of one 32-bit draw, doubles 53 bits of two;
* normal samples for fewer than 16 elements use the scalar Box-Muller on 53-bit
  doubles, keeping the second value of each pair for the next draw; 16 or more
  fill uniforms first and transform them 16 at a time (the last block redrawn);
* integers in [low, high) are a 32-bit draw modulo the range; randperm is a
  forward Fisher-Yates shuffle with 32-bit draws.

* Bernoulli draws compare one uniform per element with p: a scalar p (dropout
  masks, `bernoulli_(p)`) takes 53-bit doubles, a tensor of probabilities
  (`torch.bernoulli`, `distributions.Bernoulli`) uniforms of its own dtype. That
  is PyTorch's default CPU kernel; built with MKL and run on an Intel CPU it
  draws scalar-p masks through MKL instead, which is not reproduced.

* multinomial (and so `Categorical.sample`): see `TorchGenerator.multinomial`.

* gamma draws (`Gamma`, and `Dirichlet`/`Beta` through them): ATen's Marsaglia-Tsang
  sampler on 53-bit uniforms and the cached scalar normals; see `standard_gamma`.

* Poisson draws: ATen's `sample_poisson` on 53-bit uniforms; see `poisson`.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

DEFAULT_SEED = 67280421310721  # PyTorch's default CPU seed


class TorchGenerator:
    def __init__(self, seed: int = DEFAULT_SEED) -> None:
        self.manual_seed(seed)

    def manual_seed(self, seed: int) -> None:
        self.seed = int(seed)
        self.bits = np.random.MT19937(0)
        self.bits._legacy_seeding(int(seed) & 0xFFFFFFFF)
        self.next_normal: float | None = None

    def _raw(self, n: int) -> np.ndarray:
        return self.bits.random_raw(n).astype(np.uint64) if n else np.zeros(0, np.uint64)

    def _u24(self, n: int) -> np.ndarray:
        return (self._raw(n) & np.uint64(0xFFFFFF)).astype(np.float64) * 2.0 ** -24

    def _u53(self, n: int) -> np.ndarray:
        r = self._raw(2 * n)
        return ((r[0::2] << np.uint64(32) | r[1::2]) & np.uint64((1 << 53) - 1)).astype(np.float64) * 2.0 ** -53

    def uniform(self, low: float, high: float, shape: tuple, dtype: npt.DTypeLike) -> np.ndarray:
        n = int(np.prod(shape))
        u = self._u53(n) if np.dtype(dtype) == np.float64 else self._u24(n)
        return (u * (high - low) + low).astype(dtype).reshape(shape)

    def normal(self, mean: float, std: float, shape: tuple, dtype: npt.DTypeLike) -> np.ndarray:
        n = int(np.prod(shape))
        if n >= 16 and np.dtype(dtype) == np.float32:
            return self._normal_filled(n, mean, std).reshape(shape)
        return np.array([self._scalar_normal() * std + mean for _ in range(n)], np.float64) \
            .astype(dtype).reshape(shape)

    def _scalar_normal(self) -> float:
        if self.next_normal is not None:
            value, self.next_normal = self.next_normal, None
            return value
        u1, u2 = self._u53(2)
        r = math.sqrt(-2.0 * math.log1p(-u2))
        theta = 2.0 * math.pi * u1
        self.next_normal = r * math.sin(theta)
        return r * math.cos(theta)

    def _normal_filled(self, n: int, mean: float, std: float) -> np.ndarray:
        data = self._u24(n).astype(np.float32)
        out = data.copy()
        blocks = n // 16 * 16
        out[:blocks] = _box_muller16(data[:blocks].reshape(-1, 16), mean, std).ravel()
        if n % 16:
            out[n - 16:] = _box_muller16(self._u24(16).astype(np.float32).reshape(1, 16), mean, std).ravel()
        return out

    def bernoulli_like(self, p: float, like: np.ndarray) -> np.ndarray:
        """`empty_like(x).bernoulli_(p)`: the mask keeps `like`'s memory layout, so the
        draws fill it in storage order (a transposed input's mask is drawn transposed)."""
        order = tuple(int(a) for a in np.argsort([-s for s in like.strides], kind="stable"))
        if like.flags.c_contiguous or 0 in like.strides:
            return self.bernoulli_scalar(p, like.shape)
        stored = self.bernoulli_scalar(p, tuple(like.shape[a] for a in order))
        return np.transpose(stored, np.argsort(order))

    def bernoulli_scalar(self, p: float, shape: tuple) -> np.ndarray:
        """True with probability p, one 53-bit uniform per element."""
        return (self._u53(int(np.prod(shape))) < p).reshape(shape)

    def bernoulli(self, probs: np.ndarray) -> np.ndarray:
        """True where a uniform of the probabilities' own dtype falls below them."""
        n = probs.size
        u = self._u53(n) if probs.dtype == np.float64 else self._u24(n)
        return (u.reshape(probs.shape) < probs)

    def multinomial(self, probs: np.ndarray, n: int, replacement: bool = True) -> np.ndarray:
        """`n` draws from each row of `probs`. One draw, or draws without replacement:
        PyTorch's exponential trick (the largest p / q, q = -log1p(-u) per entry, 53-bit u).
        Several with replacement: a 53-bit uniform per draw, row by row, searched in the
        row's normalised cumulative sum (in float64)."""
        if n == 1 or not replacement:
            q = (-np.log1p(-self._u53(probs.size))).astype(probs.dtype).reshape(probs.shape)
            keys = probs / q
            return np.argsort(-keys, axis=-1, kind="stable")[:, :n].astype(np.int64)
        cdf = np.cumsum(probs.astype(np.float64), -1)
        cdf /= cdf[:, -1:]
        u = self._u53(probs.shape[0] * n).reshape(probs.shape[0], n)
        rows = [np.searchsorted(c, row, side="right") for c, row in zip(cdf, u)]
        return np.minimum(np.asarray(rows, np.int64).reshape(probs.shape[0], n), probs.shape[1] - 1)

    def standard_gamma(self, alpha: np.ndarray, dtype: npt.DTypeLike) -> np.ndarray:
        """`torch._standard_gamma`: one Marsaglia-Tsang draw per element in storage order
        (53-bit uniforms and cached Box-Muller normals), the arithmetic in `dtype` where
        PyTorch's kernel keeps the concentration's type, clamped to its smallest normal."""
        kind = np.dtype(dtype).type
        flat = np.ascontiguousarray(alpha, dtype=kind).ravel()
        out = np.array([self._gamma(a, kind) for a in flat], kind)
        return np.maximum(out, np.finfo(kind).tiny).reshape(alpha.shape)

    def _gamma(self, alpha: np.floating, kind: type) -> float:
        """ATen's `sample_gamma<scalar_t, double>` for one concentration."""
        scale = 1.0
        if alpha < 1:
            if alpha == 0:
                return 0.0
            scale *= (1.0 - self._u53(1)[0]) ** float(kind(1) / alpha)
            alpha = kind(alpha + kind(1))
        d = float(kind(alpha - kind(np.float32(1) / np.float32(3))))
        c = 1.0 / math.sqrt(9.0 * d)
        while True:
            while True:
                x = self._scalar_normal()
                y = 1.0 + c * x
                if y > 0:
                    break
            v = y * y * y
            u = 1.0 - self._u53(1)[0]
            xx = x * x
            if u < 1.0 - float(np.float32(0.0331)) * xx * xx or math.log(u) < 0.5 * xx + d * (1.0 - v + math.log(v)):
                return scale * d * v

    def dirichlet(self, alpha: np.ndarray) -> np.ndarray:
        """`torch._sample_dirichlet`: double gamma draws in storage order, normalised over
        the last dim, clamped into (0, 1) in the concentration's type."""
        kind = alpha.dtype.type
        gamma = self.standard_gamma(alpha.astype(np.float64), np.float64)
        value = (gamma / gamma.sum(-1, keepdims=True)).astype(kind)
        return np.clip(value, np.finfo(kind).tiny, np.nextafter(kind(1), kind(0)))

    def poisson(self, rates: np.ndarray) -> np.ndarray:
        """`torch.poisson`: ATen's `sample_poisson` per element in storage order, on
        53-bit uniforms: Hoermann's transformed rejection for a rate of 10 or more,
        else the product of uniforms against exp(-rate)."""
        flat = np.ascontiguousarray(rates, dtype=np.float64).ravel()
        return np.array([self._poisson(float(lam)) for lam in flat], np.float64).reshape(rates.shape)

    def _poisson(self, lam: float) -> float:
        if lam >= 10:
            slam, loglam = math.sqrt(lam), math.log(lam)
            b = 0.931 + 2.53 * slam
            a = -0.059 + 0.02483 * b
            invalpha = 1.1239 + 1.1328 / (b - 3.4)
            vr = 0.9277 - 3.6224 / (b - 2)
            while True:
                u = self._u53(1)[0] - 0.5
                v = self._u53(1)[0]
                us = 0.5 - abs(u)
                k = math.floor((2 * a / us + b) * u + lam + 0.43)
                if us >= 0.07 and v <= vr:
                    return float(k)
                if k < 0 or (us < 0.013 and v > us):
                    continue
                if (math.log(v) + math.log(invalpha) - math.log(a / (us * us) + b)
                        <= -lam + k * loglam - math.lgamma(k + 1.0)):
                    return float(k)
        if lam == 0:
            return 0.0
        enlam, count, prod = math.exp(-lam), 0, 1.0
        while True:
            prod *= self._u53(1)[0]
            if prod <= enlam:
                return float(count)
            count += 1

    def integers(self, low: int, high: int, shape: tuple) -> np.ndarray:
        span = high - low
        if span >= 1 << 32:
            r = self._raw(2 * int(np.prod(shape)))
            draws = r[0::2] << np.uint64(32) | r[1::2]
        else:
            draws = self._raw(int(np.prod(shape)))
        return ((draws % np.uint64(span)).astype(np.int64) + low).reshape(shape)

    def permutation(self, n: int) -> np.ndarray:
        out = np.arange(n, dtype=np.int64)
        draws = self._raw(max(n - 1, 0))
        for i in range(n - 1):  # Fisher-Yates needs each swap before the next draw's target
            z = i + int(draws[i] % np.uint64(n - i))
            out[i], out[z] = out[z], out[i]
        return out


def _box_muller16(blocks: np.ndarray, mean: float, std: float) -> np.ndarray:
    u1 = np.float32(1) - blocks[:, :8]
    u2 = blocks[:, 8:]
    radius = np.sqrt(np.float32(-2) * np.log(u1))
    theta = np.float32(2.0 * math.pi) * u2
    return np.concatenate([radius * np.cos(theta) * np.float32(std) + np.float32(mean),
                           radius * np.sin(theta) * np.float32(std) + np.float32(mean)], axis=1)


GEN = TorchGenerator()


def manual_seed(seed: int) -> None:
    GEN.manual_seed(seed)


def generator() -> TorchGenerator:
    return GEN
