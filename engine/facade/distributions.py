"""`torch.distributions`: Normal, Categorical, Bernoulli, MultivariateNormal (diagonal
covariance), Beta, Gamma, Dirichlet, Uniform, Poisson, Independent,
TransformedDistribution (Exp, Affine, Sigmoid and Tanh transforms), LogNormal, and
`kl_divergence` between two Normals or two Categoricals.

Each follows PyTorch's own formulas, so the graph a program builds is the one
PyTorch builds: in particular `Categorical(logits=...)` normalises its logits in
the constructor and computes `probs` lazily on first access, then caches it (and
vice versa), so a cached attribute carries the graph of its first use into
every later one — exactly the reuse a second backward trips over.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from typing import Any, cast

import numpy as np

from .. import dtypes, ops, rng, tensor_ops
from ..errors import NotSupportedByEngine
from ..tape import STATE, Tensor
from .nn import functional as F

_EPS = float(np.finfo(np.float32).eps)
_MIN = float(np.finfo(np.float32).min)


class lazy_property:  # noqa: N801 - PyTorch's name
    """Computed on first access, then stored on the instance (PyTorch's caching)."""

    def __init__(self, fn: Callable[[Any], Any]) -> None:
        self.fn, self.name = fn, fn.__name__

    def __get__(self, obj: Any, cls: Any = None) -> Any:
        if obj is None:
            return self
        value = self.fn(obj)
        setattr(obj, self.name, value)
        return value


def _tensor(x: Any) -> Tensor:
    return x if isinstance(x, Tensor) else Tensor(np.asarray(x, dtypes.DEFAULT_FLOAT.np))


def _broadcast_all(*xs: Any) -> list[Tensor]:
    ts = [_tensor(x) for x in xs]
    shape = np.broadcast_shapes(*(t.arr.shape for t in ts))
    return [ops.expand(t, shape) for t in ts]


def _shape(sample_shape: Any) -> tuple[int, ...]:
    return tuple(int(s) for s in sample_shape)


class _NoGrad:
    def __enter__(self) -> None:
        self.prev, STATE.grad_enabled = STATE.grad_enabled, False

    def __exit__(self, *exc: object) -> None:
        STATE.grad_enabled = self.prev


class Distribution:
    has_rsample = False

    def __init__(self, batch_shape: tuple = (), event_shape: tuple = (), validate_args: Any = None) -> None:
        self._batch_shape, self._event_shape = tuple(batch_shape), tuple(event_shape)

    @property
    def batch_shape(self) -> Any:
        from ..methods import Size
        return Size(self._batch_shape)

    @property
    def event_shape(self) -> Any:
        from ..methods import Size
        return Size(self._event_shape)

    def _extended(self, sample_shape: Any) -> tuple[int, ...]:
        return _shape(sample_shape) + self._batch_shape + self._event_shape

    def sample(self, sample_shape: Any = ()) -> Tensor:
        with _NoGrad():
            return self.rsample(sample_shape).detach()

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        raise NotSupportedByEngine(f"torch.distributions.{type(self).__name__}.rsample")

    @property
    def mean(self) -> Tensor:
        raise NotSupportedByEngine(f"torch.distributions.{type(self).__name__}.mean")

    @property
    def variance(self) -> Tensor:
        raise NotSupportedByEngine(f"torch.distributions.{type(self).__name__}.variance")

    def log_prob(self, value: Any) -> Tensor:
        raise NotSupportedByEngine(f"torch.distributions.{type(self).__name__}.log_prob")

    def entropy(self) -> Tensor:
        raise NotSupportedByEngine(f"torch.distributions.{type(self).__name__}.entropy")

    @property
    def stddev(self) -> Tensor:
        return ops.sqrt(self.variance)


class Normal(Distribution):
    has_rsample = True

    def __init__(self, loc: Any, scale: Any, validate_args: Any = None) -> None:
        self.loc, self.scale = _broadcast_all(loc, scale)
        super().__init__(self.loc.arr.shape)

    @property
    def mean(self) -> Tensor:
        return self.loc

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def stddev(self) -> Tensor:
        return self.scale

    @property
    def variance(self) -> Tensor:
        return ops.pow(self.stddev, 2)

    def sample(self, sample_shape: Any = ()) -> Tensor:
        shape = self._extended(sample_shape)
        with _NoGrad():
            eps = rng.generator().normal(0.0, 1.0, shape, self.loc.arr.dtype)
            return Tensor((eps * self.scale.arr + self.loc.arr).astype(self.loc.arr.dtype))

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        shape = self._extended(sample_shape)
        eps = ops.const(rng.generator().normal(0.0, 1.0, shape, self.loc.arr.dtype))
        return self.loc + eps * self.scale

    def log_prob(self, value: Any) -> Tensor:
        var = self.scale ** 2
        log_scale = ops.log(self.scale)
        return -((value - self.loc) ** 2) / (2 * var) - log_scale - math.log(math.sqrt(2 * math.pi))

    def entropy(self) -> Tensor:
        return 0.5 + 0.5 * math.log(2 * math.pi) + ops.log(self.scale)

    def cdf(self, value: Any) -> Tensor:
        return 0.5 * (1 + ops.erf((value - self.loc) * ops.reciprocal(self.scale) / math.sqrt(2)))


def _probs_to_logits(probs: Tensor, binary: bool) -> Tensor:
    ps = ops.clamp(probs, min=_EPS, max=1 - _EPS)
    return ops.log(ps) - ops.log1p(-ps) if binary else ops.log(ps)


class Categorical(Distribution):
    def __init__(self, probs: Any = None, logits: Any = None, validate_args: Any = None) -> None:
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            self.probs = probs / ops.sum(probs, -1, keepdim=True)
            param = self.probs
        else:
            self.logits = logits - ops.logsumexp(logits, -1, keepdim=True)
            param = self.logits
        self._num_events = param.arr.shape[-1]
        super().__init__(param.arr.shape[:-1])

    @lazy_property
    def logits(self) -> Tensor:
        return _probs_to_logits(self.probs, binary=False)

    @lazy_property
    def probs(self) -> Tensor:
        return ops.softmax(self.logits, -1)

    @property
    def param_shape(self) -> tuple:
        return self._batch_shape + (self._num_events,)

    @property
    def mean(self) -> Tensor:
        return ops.const(np.full(self._batch_shape, np.nan, np.float32))

    @property
    def mode(self) -> Tensor:
        return Tensor(np.argmax(self.probs.arr, -1))

    def sample(self, sample_shape: Any = ()) -> Tensor:
        shape = _shape(sample_shape)
        p = self.probs.arr.reshape(-1, self._num_events)
        draws = rng.generator().multinomial(p, int(np.prod(shape)) if shape else 1).T  # PyTorch's layout
        return Tensor(np.ascontiguousarray(draws).reshape(shape + self._batch_shape))

    def log_prob(self, value: Tensor) -> Tensor:
        v = ops.unsqueeze(ops.cast(value, np.dtype(np.int64)), -1)
        shape = np.broadcast_shapes(v.arr.shape, self.logits.arr.shape)
        log_pmf = ops.expand(self.logits, shape)
        idx = np.broadcast_to(v.arr, shape)[..., :1]
        return ops.reshape(ops.gather(log_pmf, -1, idx), shape[:-1])

    def entropy(self) -> Tensor:
        logits = ops.clamp(self.logits, min=_MIN)
        return -ops.sum(logits * self.probs, -1)


class OneHotCategorical(Categorical):
    def sample(self, sample_shape: Any = ()) -> Tensor:
        idx = super().sample(sample_shape)
        return Tensor(np.eye(self._num_events, dtype=np.float32)[idx.arr])

    def log_prob(self, value: Tensor) -> Tensor:
        return super().log_prob(Tensor(np.argmax(value.arr, -1)))


class Bernoulli(Distribution):
    def __init__(self, probs: Any = None, logits: Any = None, validate_args: Any = None) -> None:
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            (self.probs,) = _broadcast_all(probs)
            param = self.probs
        else:
            (self.logits,) = _broadcast_all(logits)
            param = self.logits
        super().__init__(param.arr.shape)

    @lazy_property
    def logits(self) -> Tensor:
        return _probs_to_logits(self.probs, binary=True)

    @lazy_property
    def probs(self) -> Tensor:
        return ops.sigmoid(self.logits)

    @property
    def mean(self) -> Tensor:
        return self.probs

    @property
    def variance(self) -> Tensor:
        return self.probs * (1 - self.probs)

    def sample(self, sample_shape: Any = ()) -> Tensor:
        shape = self._extended(sample_shape)
        p = np.broadcast_to(self.probs.arr, shape)
        return Tensor(rng.generator().bernoulli(p).astype(self.probs.arr.dtype))

    def log_prob(self, value: Any) -> Tensor:
        logits, value = _broadcast_all(self.logits, value)
        return -F.binary_cross_entropy_with_logits(logits, value, reduction="none")

    def entropy(self) -> Tensor:
        return F.binary_cross_entropy_with_logits(self.logits, self.probs, reduction="none")


class MultivariateNormal(Distribution):
    """Only diagonal covariances (given as covariance_matrix or scale_tril) are modelled."""

    has_rsample = True

    def __init__(self, loc: Tensor, covariance_matrix: Any = None, precision_matrix: Any = None,
                 scale_tril: Any = None, validate_args: Any = None) -> None:
        given = [m for m in (covariance_matrix, precision_matrix, scale_tril) if m is not None]
        if len(given) != 1:
            raise ValueError("Exactly one of covariance_matrix or precision_matrix or scale_tril may be specified.")
        matrix = _tensor(given[0])
        k = matrix.arr.shape[-1]
        if np.any(matrix.arr * (1 - np.eye(k)) != 0):
            raise NotSupportedByEngine("MultivariateNormal with a non-diagonal covariance")
        diag = ops.index(matrix, (Ellipsis, np.arange(k), np.arange(k)))
        if precision_matrix is not None:
            raise NotSupportedByEngine("MultivariateNormal(precision_matrix=...)")
        self._std = diag if scale_tril is not None else ops.sqrt(diag)
        self.loc, self._std = _broadcast_all(loc, self._std)
        super().__init__(self.loc.arr.shape[:-1], self.loc.arr.shape[-1:])

    @property
    def mean(self) -> Tensor:
        return self.loc

    @property
    def variance(self) -> Tensor:
        return self._std ** 2

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        eps = ops.const(rng.generator().normal(0.0, 1.0, self._extended(sample_shape), np.float32))
        return self.loc + eps * self._std

    def _half_log_det(self) -> Tensor:
        return ops.sum(ops.log(self._std), -1)

    def log_prob(self, value: Tensor) -> Tensor:
        m = ops.sum(((value - self.loc) / self._std) ** 2, -1)
        k = self._event_shape[0]
        return -0.5 * (k * math.log(2 * math.pi) + m) - self._half_log_det()

    def entropy(self) -> Tensor:
        k = self._event_shape[0]
        return 0.5 * k * (1.0 + math.log(2 * math.pi)) + self._half_log_det()


class Beta(Distribution):
    """PyTorch's Beta: a Dirichlet of the stacked concentrations, whose samples,
    log_prob and entropy it uses (so a Beta built once shares that stack's node)."""

    has_rsample = True

    def __init__(self, concentration1: Any, concentration0: Any, validate_args: Any = None) -> None:
        if isinstance(concentration1, (int, float)) and isinstance(concentration0, (int, float)):
            pair = _tensor([float(concentration1), float(concentration0)])
        else:
            pair = ops.stack(_broadcast_all(concentration1, concentration0), -1)
        self._dirichlet = Dirichlet(pair)
        super().__init__(pair.arr.shape[:-1])

    @property
    def concentration1(self) -> Tensor:
        return ops.index(self._dirichlet.concentration, (Ellipsis, 0))

    @property
    def concentration0(self) -> Tensor:
        return ops.index(self._dirichlet.concentration, (Ellipsis, 1))

    @property
    def mean(self) -> Tensor:
        return self.concentration1 / (self.concentration1 + self.concentration0)

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        return ops.index(self._dirichlet.rsample(sample_shape), (Ellipsis, 0))

    def log_prob(self, value: Any) -> Tensor:
        v = _tensor(value)
        return self._dirichlet.log_prob(ops.stack([v, 1.0 - v], -1))

    def entropy(self) -> Tensor:
        return self._dirichlet.entropy()


_TINY = float(np.finfo(np.float32).tiny)


class Gamma(Distribution):
    """Samples are PyTorch's (`rng.TorchGenerator.standard_gamma`); `rsample` is
    differentiable in `rate` (value = standard gamma draw / rate) and in the
    concentration (PyTorch's implicit reparameterisation, `tensor_ops.standard_gamma`)."""

    has_rsample = True

    def __init__(self, concentration: Any, rate: Any, validate_args: Any = None) -> None:
        self.concentration, self.rate = _broadcast_all(concentration, rate)
        super().__init__(self.concentration.arr.shape)

    @property
    def mean(self) -> Tensor:
        return self.concentration / self.rate

    @property
    def mode(self) -> Tensor:
        return ops.clamp((self.concentration - 1) / self.rate, min=0)

    @property
    def variance(self) -> Tensor:
        return self.concentration / ops.pow(self.rate, 2)

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        shape = self._extended(sample_shape)
        value = tensor_ops.standard_gamma(ops.expand(self.concentration, shape)) / ops.expand(self.rate, shape)
        value.arr[...] = np.maximum(value.arr, _TINY)  # PyTorch clamps the draw (detached) in place,
        value._counter[0] += 1  # which bumps its version
        return value

    def log_prob(self, value: Any) -> Tensor:
        a, r = self.concentration, self.rate
        v = _tensor(value)
        return tensor_ops.xlogy(a, r) + tensor_ops.xlogy(a - 1, v) - r * v - tensor_ops.lgamma(a)

    def entropy(self) -> Tensor:
        a = self.concentration
        return a - ops.log(self.rate) + tensor_ops.lgamma(a) + (1.0 - a) * tensor_ops.digamma(a)


class Dirichlet(Distribution):
    """Samples (normalised gamma draws) are PyTorch's; log_prob and entropy follow
    PyTorch's formulas, so a policy's gradient flows through log_prob."""

    has_rsample = True

    def __init__(self, concentration: Any, validate_args: Any = None) -> None:
        self.concentration = _tensor(concentration)
        if self.concentration.arr.ndim < 1:
            raise ValueError("`concentration` parameter must be at least one-dimensional.")
        super().__init__(self.concentration.arr.shape[:-1], self.concentration.arr.shape[-1:])

    @property
    def mean(self) -> Tensor:
        return self.concentration / ops.sum(self.concentration, -1, keepdim=True)

    @property
    def variance(self) -> Tensor:
        a = self.concentration
        a0 = ops.sum(a, -1, keepdim=True)
        return a * (a0 - a) / (ops.pow(a0, 2) * (a0 + 1))

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        """PyTorch's `_Dirichlet.apply(concentration.expand(shape))`: its implicit
        reparameterisation gradient in the concentration (`tensor_ops.dirichlet`)."""
        shape = self._extended(sample_shape)
        return tensor_ops.dirichlet(ops.apply(ops.EXPAND, self.concentration, shape=shape))

    def log_prob(self, value: Any) -> Tensor:
        a = self.concentration
        return (ops.sum(tensor_ops.xlogy(a - 1.0, _tensor(value)), -1) + tensor_ops.lgamma(ops.sum(a, -1))
                - ops.sum(tensor_ops.lgamma(a), -1))

    def entropy(self) -> Tensor:
        a = self.concentration
        k = a.arr.shape[-1]
        a0 = ops.sum(a, -1)
        return (ops.sum(tensor_ops.lgamma(a), -1) - tensor_ops.lgamma(a0) - (k - a0) * tensor_ops.digamma(a0)
                - ops.sum((a - 1.0) * tensor_ops.digamma(a), -1))


class Uniform(Distribution):
    has_rsample = True

    def __init__(self, low: Any, high: Any, validate_args: Any = None) -> None:
        self.low, self.high = _broadcast_all(low, high)
        super().__init__(self.low.arr.shape)

    @property
    def mean(self) -> Tensor:
        return (self.high + self.low) / 2

    @property
    def variance(self) -> Tensor:
        return (self.high - self.low) ** 2 / 12

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        u = ops.const(rng.generator().uniform(0.0, 1.0, self._extended(sample_shape), self.low.arr.dtype))
        return self.low + u * (self.high - self.low)

    def log_prob(self, value: Any) -> Tensor:
        v = value.arr if isinstance(value, Tensor) else np.asarray(value)
        inside = ((self.low.arr <= v) & (self.high.arr > v)).astype(self.low.arr.dtype)
        with np.errstate(divide="ignore"):
            return ops.const(np.log(inside)) - ops.log(self.high - self.low)

    def entropy(self) -> Tensor:
        return ops.log(self.high - self.low)


class Independent(Distribution):
    """`base` with its rightmost `reinterpreted_batch_ndims` batch dims read as event dims:
    log_prob and entropy sum over them (the diagonal Gaussian policy of SAC and PPO code)."""

    def __init__(self, base_distribution: Distribution, reinterpreted_batch_ndims: int,
                 validate_args: Any = None) -> None:
        self.base_dist, self.reinterpreted_batch_ndims = base_distribution, reinterpreted_batch_ndims
        shape = base_distribution._batch_shape + base_distribution._event_shape
        cut = len(base_distribution._batch_shape) - reinterpreted_batch_ndims
        if cut < 0:
            raise ValueError(f"Expected reinterpreted_batch_ndims <= len(base_distribution.batch_shape), "
                             f"actual {reinterpreted_batch_ndims} vs {len(base_distribution._batch_shape)}")
        self.has_rsample = base_distribution.has_rsample
        super().__init__(shape[:cut], shape[cut:])

    def _summed(self, t: Tensor) -> Tensor:
        n = self.reinterpreted_batch_ndims
        return ops.sum(t, tuple(range(-n, 0))) if n else t

    @property
    def mean(self) -> Tensor:
        return self.base_dist.mean

    @property
    def variance(self) -> Tensor:
        return self.base_dist.variance

    def sample(self, sample_shape: Any = ()) -> Tensor:
        return self.base_dist.sample(sample_shape)

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        return self.base_dist.rsample(sample_shape)

    def log_prob(self, value: Any) -> Tensor:
        return self._summed(self.base_dist.log_prob(value))

    def entropy(self) -> Tensor:
        return self._summed(self.base_dist.entropy())


class Poisson(Distribution):
    """Counts; samples are PyTorch's (`torch.poisson` of the expanded rate)."""

    def __init__(self, rate: Any, validate_args: Any = None) -> None:
        (self.rate,) = _broadcast_all(rate)
        super().__init__(self.rate.arr.shape)

    @property
    def mean(self) -> Tensor:
        return self.rate

    @property
    def mode(self) -> Tensor:
        return Tensor(np.floor(self.rate.arr))  # floor's gradient is zero: kept out of the graph

    @property
    def variance(self) -> Tensor:
        return self.rate

    def sample(self, sample_shape: Any = ()) -> Tensor:
        shape = self._extended(sample_shape)
        rates = np.broadcast_to(self.rate.arr, shape)
        return Tensor(rng.generator().poisson(rates).astype(self.rate.arr.dtype))

    def log_prob(self, value: Any) -> Tensor:
        value = _tensor(value)
        return tensor_ops.xlogy(value, self.rate) - self.rate - tensor_ops.lgamma(value + 1)

    def entropy(self) -> Tensor:
        raise NotImplementedError  # PyTorch defines none for Poisson


# ------------------------------------------------------------------ transforms


class Transform:
    """An invertible map with its log |det Jacobian| (elementwise: event_dim 0). PyTorch
    caches the last (x, y) when `cache_size=1`; that caching is not modelled."""

    def __init__(self, cache_size: int = 0) -> None:
        if cache_size:
            raise NotSupportedByEngine(f"torch.distributions.{type(self).__name__}(cache_size={cache_size})")

    def __call__(self, x: Tensor) -> Tensor:
        raise NotImplementedError

    def inv(self, y: Tensor) -> Tensor:
        raise NotImplementedError

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        raise NotImplementedError


class ExpTransform(Transform):
    def __call__(self, x: Tensor) -> Tensor:
        return ops.exp(x)

    def inv(self, y: Tensor) -> Tensor:
        return ops.log(y)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return x


class AffineTransform(Transform):
    def __init__(self, loc: Any, scale: Any, event_dim: int = 0, cache_size: int = 0) -> None:
        super().__init__(cache_size)
        if event_dim:
            raise NotSupportedByEngine("torch.distributions.AffineTransform(event_dim > 0)")
        self.loc, self.scale = loc, scale

    def __call__(self, x: Tensor) -> Tensor:
        return self.loc + self.scale * x

    def inv(self, y: Tensor) -> Tensor:
        return (y - self.loc) / self.scale

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        if isinstance(self.scale, Tensor):
            return ops.expand(ops.log(ops.abs(self.scale)), x.arr.shape)
        return Tensor(np.full_like(x.arr, math.log(abs(self.scale))))


class SigmoidTransform(Transform):
    def __call__(self, x: Tensor) -> Tensor:
        return ops.sigmoid(x)

    def inv(self, y: Tensor) -> Tensor:
        info = np.finfo(y.arr.dtype)
        y = ops.clamp(y, float(info.tiny), 1.0 - float(info.eps))
        return ops.log(y) - ops.log1p(-y)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return -F.softplus(-x) - F.softplus(x)


class TanhTransform(Transform):
    """The squashed Gaussian of SAC; the inverse is atanh written as log1p's."""

    def __call__(self, x: Tensor) -> Tensor:
        return ops.tanh(x)

    def inv(self, y: Tensor) -> Tensor:
        return 0.5 * (ops.log1p(y) - ops.log1p(-y))

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return 2.0 * (math.log(2.0) - x - F.softplus(-2.0 * x))


class TransformedDistribution(Distribution):
    """`base_distribution` pushed through elementwise `transforms`, with PyTorch's
    log_prob: each inverse in reverse order, minus its log |det Jacobian|, then the base's."""

    def __init__(self, base_distribution: Distribution, transforms: Any, validate_args: Any = None) -> None:
        self.base_dist = base_distribution
        self.transforms = [transforms] if isinstance(transforms, Transform) else list(transforms)
        if base_distribution._event_shape:
            raise NotSupportedByEngine("torch.distributions.TransformedDistribution of a base with an event shape")
        self.has_rsample = base_distribution.has_rsample
        super().__init__(base_distribution._batch_shape)

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        x = self.base_dist.rsample(sample_shape)
        for transform in self.transforms:
            x = transform(x)
        return x

    def sample(self, sample_shape: Any = ()) -> Tensor:
        with _NoGrad():
            x = self.base_dist.sample(sample_shape)
            for transform in self.transforms:
                x = transform(x)
            return x

    def log_prob(self, value: Any) -> Tensor:
        log_prob: Any = 0.0
        y = _tensor(value)
        for transform in reversed(self.transforms):
            x = transform.inv(y)
            log_prob = log_prob - transform.log_abs_det_jacobian(x, y)
            y = x
        return log_prob + self.base_dist.log_prob(y)

    def entropy(self) -> Tensor:
        raise NotImplementedError  # PyTorch defines none for a general transform


class LogNormal(TransformedDistribution):
    has_rsample = True

    def __init__(self, loc: Any, scale: Any, validate_args: Any = None) -> None:
        super().__init__(Normal(loc, scale), ExpTransform())

    @property
    def loc(self) -> Tensor:
        return cast(Normal, self.base_dist).loc

    @property
    def scale(self) -> Tensor:
        return cast(Normal, self.base_dist).scale

    @property
    def mean(self) -> Tensor:
        return ops.exp(self.loc + self.scale ** 2 / 2)

    @property
    def mode(self) -> Tensor:
        return ops.exp(self.loc - self.scale ** 2)

    @property
    def variance(self) -> Tensor:
        scale_sq = self.scale ** 2
        return (ops.exp(scale_sq) - 1) * ops.exp(2 * self.loc + scale_sq)

    def entropy(self) -> Tensor:
        return self.base_dist.entropy() + self.loc


transforms = sys.modules[__name__]  # `torch.distributions.transforms.ExpTransform`


def kl_divergence(p: Distribution, q: Distribution) -> Tensor:
    if isinstance(p, Normal) and isinstance(q, Normal):
        var_ratio = (p.scale / q.scale) ** 2
        t1 = ((p.loc - q.loc) / q.scale) ** 2
        return 0.5 * (var_ratio + t1 - 1 - ops.log(var_ratio))
    if isinstance(p, Categorical) and isinstance(q, Categorical):
        t = p.probs * (p.logits - q.logits)
        t = ops.where(q.probs.arr == 0, math.inf, t)
        t = ops.where(p.probs.arr == 0, 0.0, t)
        return ops.sum(t, -1)
    raise NotSupportedByEngine(f"kl_divergence({type(p).__name__}, {type(q).__name__})")


def __getattr__(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(name)
    raise NotSupportedByEngine(f"torch.distributions.{name}")
