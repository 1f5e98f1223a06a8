"""More tensor ops, declared like `ops`: einsum, cumprod, scatter/index adds, unfold,
lgamma/digamma (what distributions need), cdist."""

from __future__ import annotations

import math
import string
from collections.abc import Sequence
from typing import Any

import numpy as np

from . import ops, rng, tape
from .errors import NotSupportedByEngine
from .tape import Op, Tensor, apply

# ---------------------------------------------------------------------- einsum


def _parse(equation: str, ndims: Sequence[int]) -> tuple[list[str], str]:
    """Explicit subscripts per operand and for the output ('...' spelled out in capitals)."""
    eq = equation.replace(" ", "")
    lhs, _, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(ndims):
        raise RuntimeError("einsum(): more operands were provided than specified in the equation")
    spare = iter(c for c in string.ascii_uppercase if c not in eq)
    width = max((n - len(t.replace("...", "")) for t, n in zip(terms, ndims) if "..." in t), default=0)
    ell = "".join(next(spare) for _ in range(width))
    terms = [t.replace("...", ell[width - (n - len(t.replace("...", ""))):]) for t, n in zip(terms, ndims)]
    if "->" in eq:
        out = rhs.replace("...", ell)
    else:
        letters = "".join(terms)
        out = ell + "".join(sorted(c for c in set(letters) if letters.count(c) == 1 and c not in ell))
    return terms, out


def _einsum_bwd(c: Any, g: Tensor) -> tuple:
    terms, out = c.attrs["terms"], c.attrs["out"]
    grads: list[Tensor | None] = []
    for i, need in enumerate(c.needs):
        if not need:
            grads.append(None)
            continue
        others = [(terms[j], c.saved[j]) for j in range(len(terms)) if j != i]
        have = set(out).union(*(set(t) for t, _ in others))
        target = "".join(ch for ch in terms[i] if ch in have)
        gi = einsum_explicit([out] + [t for t, _ in others], target, [g] + [t for _, t in others])
        if target != terms[i]:  # letters only this operand had were summed: broadcast back
            shape = tuple(c.shapes[i][terms[i].index(ch)] if ch in target else 1 for ch in terms[i])
            order = [target.index(ch) for ch in terms[i] if ch in target]
            gi = ops.expand(ops.reshape(ops.permute(gi, order) if order != sorted(order) else gi, shape),
                            c.shapes[i])
        grads.append(gi)
    return tuple(grads)


EINSUM = Op("Einsum", lambda *arrays, terms, out: np.einsum(",".join(terms) + "->" + out, *arrays,
                                                            optimize=len(arrays) > 2),
            _einsum_bwd, lambda needs: tuple(range(len(needs))) if len(needs) > 1 else ())


def einsum_explicit(terms: list[str], out: str, tensors: list[Tensor]) -> Tensor:
    dims: dict[str, int] = {}
    for t, x in zip(terms, tensors):
        if len(set(t)) != len(t):
            raise NotSupportedByEngine("einsum with a repeated index in one operand (a diagonal)")
        for ch, n in zip(t, x.arr.shape):
            if dims.setdefault(ch, n) != n:
                raise NotSupportedByEngine("einsum with broadcast dimensions of different sizes")
    return apply(EINSUM, *ops.operands(*tensors), terms=tuple(terms), out=out)


def einsum(equation: str, *operands: Any) -> Tensor:
    tensors = list(operands[0]) if len(operands) == 1 and isinstance(operands[0], (list, tuple)) \
        else list(operands)
    terms, out = _parse(equation, [t.arr.ndim for t in tensors])
    plain = all(len(set(t)) == len(t) for t in terms) and "..." not in equation
    if len(tensors) == 1 and len(set(terms[0])) == len(terms[0]) and tape.STATE.semantics == "torch":
        return _one_operand(terms[0], out, tensors[0])
    if len(tensors) == 2 and plain and tape.STATE.semantics == "torch":
        return _two_operands(terms, out, *ops.operands(*tensors))
    return einsum_explicit(terms, out, tensors)


def _aligned(term: str, x: Tensor, order: list[str]) -> Tensor:
    """ATen's first step: a size-1 dim appended for each label the operand lacks, then one
    permute into the label order (output labels first, the others sorted)."""
    at, n = [], len(term)
    for ch in order:
        if ch in term:
            at.append(term.index(ch))
        else:
            x = ops.unsqueeze(x, x.arr.ndim)
            at.append(n)
            n += 1
    return ops.permute(x, at)


def _two_operands(terms: list[str], out: str, a: Tensor, b: Tensor) -> Tensor:
    """PyTorch's lowering of a two-operand einsum: both aligned, a label only one operand
    has summed out, the rest one bmm (`sumproduct_pair`), the contracted dims viewed away."""
    order = list(out) + sorted(set(terms[0] + terms[1]) - set(out))
    x, y = _aligned(terms[0], a, order), _aligned(terms[1], b, order)
    shared, x_only, y_only = [], [], []
    for d in range(len(out), len(order)):
        sx, sy = x.arr.shape[d] != 1, y.arr.shape[d] != 1
        if sx and sy:
            shared.append(d)
        elif sx:
            x_only.append(d)
        elif sy:
            y_only.append(d)
    if x_only:
        x = ops.sum(x, tuple(x_only), keepdim=True)
    if y_only:
        y = ops.sum(y, tuple(y_only), keepdim=True)
    result = _sumproduct_pair(x, y, shared)
    return ops.reshape(result, result.arr.shape[:len(out)]) if len(order) > len(out) else result


def _sumproduct_pair(left: Tensor, right: Tensor, summed: list[int]) -> Tensor:
    """ATen's `sumproduct_pair`: dims in both (batch), in one (kept), summed; one bmm."""
    if not summed:
        return left * right
    both: list[int] = []
    only_left: list[int] = []
    only_right: list[int] = []
    for d in range(left.arr.ndim):
        if d in summed:
            continue
        sl, sr = left.arr.shape[d] != 1, right.arr.shape[d] != 1
        (both if sl and sr else only_left if sl else only_right).append(d)
    if only_left and only_right and only_right[-1] < only_left[0]:  # bmm then writes the output's order
        left, right, only_left, only_right = right, left, only_right, only_left
    size = lambda t, dims: int(np.prod([t.arr.shape[d] for d in dims]))  # noqa: E731
    out_size = ([left.arr.shape[d] for d in both + only_left] + [1] * len(summed)
                + [right.arr.shape[d] for d in only_right])
    lhs = ops.reshape_as_torch(ops.permute(left, both + only_left + summed + only_right),
                               (size(left, both), size(left, only_left), size(left, summed)))
    rhs = ops.reshape_as_torch(ops.permute(right, both + summed + only_right + only_left),
                               (size(left, both), size(left, summed), size(right, only_right)))
    placed = both + only_left + summed + only_right
    return ops.permute(ops.reshape(ops.bmm(lhs, rhs), out_size), [placed.index(d) for d in range(left.arr.ndim)])


def _one_operand(term: str, out: str, x: Tensor) -> Tensor:
    """PyTorch's lowering of a one-operand einsum: a permute (always recorded) that puts the
    output's letters first, then a sum over the others."""
    summed = [ch for ch in term if ch not in out]
    moved = ops.permute(x, [term.index(ch) for ch in out] + [term.index(ch) for ch in summed])
    return ops.sum(moved, tuple(range(len(out), len(term)))) if summed else moved


# --------------------------------------------------------------------- cumprod


def _cumprod_bwd(c: Any, g: Tensor) -> Tensor:
    x, out, d = c.saved[0], c.saved["out"], c.attrs["dim"]
    if (x.arr == 0).any():
        raise NotSupportedByEngine("the gradient of cumprod at an input equal to zero")
    return ops.flip(ops.cumsum(ops.flip(g * out, (d,)), d), (d,)) / x


CUMPROD = Op("Cumprod", lambda a, dim: np.cumprod(a, axis=dim, dtype=a.dtype),
             lambda c, g: (_cumprod_bwd(c, g),), (0, "out"))


def cumprod(a: Tensor, dim: int, dtype: Any = None) -> Tensor:
    return apply(CUMPROD, a, dim=dim % max(a.arr.ndim, 1))


# -------------------------------------------------------- scatter / index adds


def _along(idx: np.ndarray, dim: int) -> tuple:
    grids: list[np.ndarray] = list(np.indices(idx.shape, sparse=True))
    grids[dim] = idx
    return tuple(grids)


def _scatter_add_fwd(a: np.ndarray, src: np.ndarray, dim: int, idx: np.ndarray) -> tuple:
    out = a.copy()
    np.add.at(out, _along(idx, dim), src[tuple(slice(0, n) for n in idx.shape)])
    return out, {"index": idx}


SCATTER_ADD = Op(
    "ScatterAdd", _scatter_add_fwd,
    lambda c, g: (g if c.needs[0] else None,
                  ops.gather(g, c.attrs["dim"], c.attrs["idx"]) if c.needs[1] else None),
    ("index",))


def scatter_add(a: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:
    d = dim % a.arr.ndim
    x, s = ops.operands(a, src)
    return apply(SCATTER_ADD, x, s, dim=d, idx=index.arr.astype(np.int64))


def _index_add_fwd(a: np.ndarray, src: np.ndarray, dim: int, idx: np.ndarray, alpha: float) -> tuple:
    out = a.copy()
    key: tuple[Any, ...] = (slice(None),) * dim + (idx,)
    np.add.at(out, key, src * a.dtype.type(alpha))
    return out, {"index": idx}


def _index_add_src_grad(c: Any, g: Tensor) -> Tensor:
    key = (slice(None),) * c.attrs["dim"] + (c.attrs["idx"],)
    picked = ops.index(g, key)
    return picked * c.attrs["alpha"] if c.attrs["alpha"] != 1 else picked


INDEX_ADD = Op("IndexAdd", _index_add_fwd,
               lambda c, g: (g if c.needs[0] else None, _index_add_src_grad(c, g) if c.needs[1] else None),
               ("index",))


def index_add(a: Tensor, dim: int, index: Tensor, source: Tensor, alpha: float = 1) -> Tensor:
    x, s = ops.operands(a, source)
    return apply(INDEX_ADD, x, s, dim=dim % a.arr.ndim, idx=index.arr.astype(np.int64).ravel(),
                 alpha=alpha)


# ---------------------------------------------------------------------- unfold


def _unfold_fwd(a: np.ndarray, dim: int, size: int, step: int) -> np.ndarray:
    win = np.lib.stride_tricks.sliding_window_view(a, size, axis=dim)
    return np.ascontiguousarray(np.take(win, np.arange(0, win.shape[dim], step), axis=dim))


def _unfold_np_bwd(g: np.ndarray, shape: tuple, dim: int, size: int, step: int) -> np.ndarray:
    out = np.zeros(shape, g.dtype)
    n = g.shape[dim]
    moved = np.moveaxis(out, dim, -1)
    gm = np.moveaxis(g, dim, -2)  # (..., n windows, size)
    for k in range(size):  # one pass per window position, vectorised over windows
        moved[..., k:k + step * (n - 1) + 1:step] += gm[..., k]
    return out


UNFOLD = Op("Unfold", _unfold_fwd,
            lambda c, g: (apply(UNFOLD_BACKWARD, g, shape=c.shapes[0], dim=c.attrs["dim"],
                                size=c.attrs["size"], step=c.attrs["step"]),))
UNFOLD_BACKWARD: Op = Op("UnfoldBackward", _unfold_np_bwd,
                     lambda c, g: (apply(UNFOLD, g, dim=c.attrs["dim"], size=c.attrs["size"],
                                         step=c.attrs["step"]),))


def unfold(a: Tensor, dimension: int, size: int, step: int) -> Tensor:
    return apply(UNFOLD, a, dim=dimension % max(a.arr.ndim, 1), size=size, step=step)


# ------------------------------------------------------------ lgamma, digamma


def _shift_up(x: np.ndarray, power: int) -> tuple[np.ndarray, np.ndarray]:
    """Shift positive x to >= 6 by the recurrences psi(x) = psi(x + 1) - 1/x and
    psi1(x) = psi1(x + 1) + 1/x**2: the shifted x and the sum of the 1/x**power terms."""
    y = np.asarray(x, np.float64).copy()
    terms = np.zeros_like(y)
    for _ in range(6):
        small = y < 6
        terms += np.where(small, 1.0 / np.where(small, y, 1.0) ** power, 0.0)
        y = np.where(small, y + 1, y)
    return y, terms


def _digamma_np(x: np.ndarray) -> np.ndarray:
    """The recurrence, then the asymptotic series (float64 accurate for x > 0)."""
    y, terms = _shift_up(x, 1)
    inv = 1.0 / y
    inv2 = inv * inv
    tail = 1 / 120 - inv2 * (1 / 252 - inv2 * (1 / 240 - inv2 / 132))
    series = np.log(y) - 0.5 * inv - inv2 * (1 / 12 - inv2 * tail)
    return series - terms


def _trigamma_np(x: np.ndarray) -> np.ndarray:
    y, terms = _shift_up(x, 2)
    inv = 1.0 / y
    inv2 = inv * inv
    return terms + inv + inv2 / 2 + inv * inv2 * (1 / 6 - inv2 * (1 / 30 - inv2 * (1 / 42 - inv2 / 30)))


def _lgamma_np(x: np.ndarray) -> np.ndarray:
    return np.vectorize(math.lgamma, otypes=[np.float64])(x).astype(x.dtype) if x.size else x.copy()


TRIGAMMA = Op("Polygamma", lambda a: _trigamma_np(a).astype(a.dtype),
              lambda c, g: (_no_second_order("polygamma"),), (0,))
DIGAMMA = Op("Digamma", lambda a: _digamma_np(a).astype(a.dtype),
             lambda c, g: (g * apply(TRIGAMMA, c.saved[0]),), (0,))
LGAMMA = Op("Lgamma", _lgamma_np, lambda c, g: (g * apply(DIGAMMA, c.saved[0]),), (0,))


def _no_second_order(what: str) -> Tensor:
    raise NotSupportedByEngine(f"the gradient of {what}")


def lgamma(a: Tensor) -> Tensor:
    return apply(LGAMMA, ops._float(a))


def digamma(a: Tensor) -> Tensor:
    return apply(DIGAMMA, ops._float(a))


# ------------------------------------------------------------- standard gamma

# ATen's bivariate rational approximation of the reparameterised gradient (rows: the
# constant, linear and quadratic coefficients in u = log(x / alpha); columns: the
# cubic numerator and denominator in v = log(alpha)).
_GAMMA_GRAD_UV = np.array([
    [0.16009398, -0.094634809, 0.025146376, -0.0030648343, 1, 0.32668115, 0.10406089, 0.0014179084],
    [0.53487893, 0.1298071, 0.065735949, -0.0015649758, 0.16639465, 0.020070113, -0.0035938915, -0.00058392623],
    [0.040121004, -0.0065914022, -0.0026286047, -0.0013441777, 0.017050642, -0.0021309326, 0.00085092367,
     -1.5247877e-07],
])


def _gamma_grad_one(alpha: float, x: float) -> float:
    """d x / d alpha of a standard gamma draw x (implicit reparameterisation), as
    PyTorch's `_standard_gamma_grad` computes it: a Taylor series for small x, Rice's
    saddle point for large alpha, else a rational approximation."""
    if x < 0.8:
        numer, denom = 1.0, alpha
        series1, series2 = numer / denom, numer / (denom * denom)
        for i in range(1, 6):
            numer *= -x / i
            denom += 1
            series1 += numer / denom
            series2 += numer / (denom * denom)
        pow_x_alpha = x ** alpha
        pdf = x ** (alpha - 1) * math.exp(-x)
        cdf = pow_x_alpha * series1
        cdf_alpha = (math.log(x) - float(_digamma_np(np.array([alpha]))[0])) * cdf - pow_x_alpha * series2
        result = -cdf_alpha / pdf
        return 0.0 if math.isnan(result) else result
    if alpha > 8.0:
        if 0.9 * alpha <= x <= 1.1 * alpha:
            numer_1 = 1 + 24 * alpha * (1 + 12 * alpha)
            numer_2 = 1440 * alpha * alpha + 6 * x * (53 - 120 * x) - 65 * x * x / alpha + alpha * (107 + 3600 * x)
            return numer_1 * numer_2 / (1244160 * alpha * alpha * alpha * alpha)
        denom = math.sqrt(8 * alpha)
        term2 = denom / (alpha - x)
        term3 = (x - alpha - alpha * math.log(x / alpha)) ** -1.5
        term23 = term2 - term3 if x < alpha else term2 + term3
        term1 = math.log(x / alpha) * term23 - math.sqrt(2 / alpha) * (alpha + x) / ((alpha - x) * (alpha - x))
        stirling = 1 + 1 / (12 * alpha) * (1 + 1 / (24 * alpha))
        return -stirling * x * term1 / denom
    u, v = math.log(x / alpha), math.log(alpha)
    c = _GAMMA_GRAD_UV[0] + u * (_GAMMA_GRAD_UV[1] + u * _GAMMA_GRAD_UV[2])
    p = c[0] + v * (c[1] + v * (c[2] + v * c[3]))
    q = c[4] + v * (c[5] + v * (c[6] + v * c[7]))
    return math.exp(p / q)


def _standard_gamma_bwd(c: Any, g: Tensor) -> tuple[Tensor]:
    if tape.STATE.grad_enabled:  # PyTorch's `_standard_gamma_grad` has no derivative of its own
        raise NotSupportedByEngine("create_graph through a gamma sample's concentration gradient")
    alpha, x = c.saved[0].arr, c.saved["out"].arr
    grad = np.array([_gamma_grad_one(float(a), float(v)) for a, v in zip(alpha.ravel(), x.ravel())])
    return (g * ops.const(grad.reshape(alpha.shape).astype(alpha.dtype)),)


STANDARD_GAMMA = Op("StandardGamma", lambda a: rng.generator().standard_gamma(a, a.dtype), _standard_gamma_bwd,
                    (0, "out"))


def standard_gamma(concentration: Tensor) -> Tensor:
    """`torch._standard_gamma`: PyTorch's draws, differentiable in the concentration."""
    return apply(STANDARD_GAMMA, concentration)


# ------------------------------------------------------------------ dirichlet

# ATen's rational correction to the analytic approximation of a Beta draw's
# reparameterised gradient: [numerator p, denominator q][power of u][power of a]
# [cubic coefficients in b].
_BETA_GRAD_PQ = np.array([
    [[[1.003668233, -0.01061107488, -0.0657888334, 0.01201642863],
      [0.6336835991, -0.3557432599, 0.05486251648, -0.001465281033],
      [-0.03276231906, 0.004474107445, 0.002429354597, -0.0001557569013]],
     [[0.221950385, -0.3187676331, 0.01799915743, 0.01074823814],
      [-0.2951249643, 0.06219954479, 0.01535556598, 0.001550077057],
      [0.02155310298, 0.004170831599, 0.001292462449, 6.976601077e-05]],
     [[-0.05980841433, 0.008441916499, 0.01085618172, 0.002319392565],
      [0.02911413504, 0.01400243777, -0.002721828457, 0.000751041181],
      [0.005900514878, -0.001936558688, -9.495446725e-06, 5.385558597e-05]]],
    [[[1, -0.02924021934, -0.04438342661, 0.007285809825],
      [0.6357567472, -0.3473456711, 0.05454656494, -0.002407477521],
      [-0.03301322327, 0.004845219414, 0.00231480583, -0.0002307248149]],
     [[0.5925320577, -0.1757678135, 0.01505928619, 0.000564515273],
      [0.1014815858, -0.06589186703, 0.01272886114, -0.0007316646956],
      [-0.007258481865, 0.001096195486, 0.0003934994223, -4.12701925e-05]],
     [[0.06469649321, -0.0236701437, 0.002902096474, -5.896963079e-05],
      [0.001925008108, -0.002869809258, 0.0008000589141, -6.063713228e-05],
      [-0.0003477407336, 6.959756487e-05, 1.097287507e-05, -1.650964693e-06]]],
])


def _psi(x: float) -> float:
    return float(_digamma_np(np.array([x], np.float64))[0])


def _beta_grad_alpha_small(x: float, alpha: float, beta: float) -> float:
    """Taylor series in x, for x near 0."""
    factor = _psi(alpha) - _psi(alpha + beta) - math.log(x)
    numer, series = 1.0, 1.0 / alpha * (factor + 1.0 / alpha)
    for i in range(1, 11):
        numer *= (i - beta) * x / i
        denom = alpha + i
        series += numer / denom * (factor + 1.0 / denom)
    result = x * (1.0 - x) ** -beta * series
    return 0.0 if math.isnan(result) else result


def _beta_grad_beta_small(x: float, alpha: float, beta: float) -> float:
    """The gradient in beta, by a Taylor series in x near 0."""
    factor = _psi(alpha + beta) - _psi(beta)
    numer, betas, dbetas, series = 1.0, 1.0, 0.0, factor / alpha
    for i in range(1, 9):
        numer *= -x / i
        dbetas = dbetas * (beta - i) + betas
        betas *= beta - i
        series += numer / (alpha + i) * (dbetas + factor * betas)
    result = -(1.0 - x) ** (1.0 - beta) * series
    return 0.0 if math.isnan(result) else result


def _beta_grad_alpha_mid(x: float, alpha: float, beta: float) -> float:
    """Rice's saddle point expansion, for large alpha and beta."""
    total = alpha + beta
    mean = alpha / total
    std = math.sqrt(alpha * beta / (total + 1)) / total
    if mean - 0.1 * std <= x <= mean + 0.1 * std:  # the singularity at x = mean
        bb = beta * beta
        poly = 47 * x * bb * bb + alpha * (
            (43 + 20 * (16 + 27 * beta) * x) * bb * beta + alpha * (
                3 * (59 + 180 * beta - 90 * x) * bb + alpha * (
                    (453 + 1620 * beta * (1 - x) - 455 * x) * beta + alpha * (8 * (1 - x) * (135 * beta - 11)))))
        prefactor_num = (1 + 12 * alpha) * (1 + 12 * beta) / (total * total)
        prefactor_den = 12960 * alpha ** 3 * beta * beta * (1 + 12 * total)
        return prefactor_num / (1 - x) * poly / prefactor_den
    prefactor = -x / math.sqrt(2 * alpha * beta / total)
    stirling = ((1 + 1 / (12 * alpha) + 1 / (288 * alpha * alpha)) * (1 + 1 / (12 * beta) + 1 / (288 * beta * beta))
                / (1 + 1 / (12 * total) + 1 / (288 * total * total)))
    axbx = alpha * (x - 1) + beta * x
    term1 = ((2 * alpha * alpha * (x - 1) + alpha * beta * (x - 1) - x * beta * beta)
             / (math.sqrt(2 * alpha / beta) * total ** 1.5 * axbx * axbx))
    term2 = 0.5 * math.log(alpha / (total * x))
    term3 = math.sqrt(8 * alpha * beta / total) / (beta * x + alpha * (x - 1))
    term4 = (beta * math.log(beta / (total * (1 - x))) + alpha * math.log(alpha / (total * x))) ** -1.5
    return stirling * prefactor * (term1 + term2 * (term3 + (term4 if x < mean else -term4)))


def _dirichlet_grad_one(x: float, alpha: float, total: float, kind: type) -> float:
    """PyTorch's `_dirichlet_grad` for one element: -(d/d alpha cdf(x; alpha, beta)) /
    pdf(x; alpha, beta) / (1 - x) of the Beta marginal, beta = total - alpha. The branch
    tests run in the concentration's type, as ATen's do."""
    beta = float(kind(kind(total) - kind(alpha)))
    boundary = float(kind(total) * kind(x) * (kind(1) - kind(x)))
    if x <= 0.5 and boundary < 2.5:
        return _beta_grad_alpha_small(x, alpha, beta)
    if x >= 0.5 and boundary < 0.75:
        return -_beta_grad_beta_small(1 - x, beta, alpha)
    if alpha > 6 and beta > 6:
        return _beta_grad_alpha_mid(x, alpha, total - alpha)
    u = math.log(x)
    a = math.log(alpha) - u
    b = math.log(total) - a
    powers = np.outer([1.0, u, u * u], [1.0, a, a * a])
    c = _BETA_GRAD_PQ
    cubic = c[..., 0] + b * (c[..., 1] + b * (c[..., 2] + b * c[..., 3]))
    p, q = (float((powers * cubic[k]).sum()) for k in (0, 1))
    return p / q * (x * (_psi(total) - _psi(alpha)) / (total - alpha))


def _dirichlet_bwd(c: Any, g: Tensor) -> tuple[Tensor]:
    """PyTorch's `_Dirichlet.backward` (once differentiable): the implicit gradient of
    each part, projected onto the simplex: grad * (g - sum(x * g))."""
    if tape.STATE.grad_enabled and g.requires_grad:
        raise NotSupportedByEngine("create_graph through Dirichlet.rsample's once-differentiable backward")
    x, alpha = c.saved["out"].arr, c.saved[0].arr
    total = np.broadcast_to(alpha.sum(-1, keepdims=True), alpha.shape)
    kind = alpha.dtype.type
    grad = np.array([_dirichlet_grad_one(float(v), float(a), float(t), kind)
                     for v, a, t in zip(x.ravel(), alpha.ravel(), total.ravel())]).reshape(alpha.shape)
    gx = g.arr - (x * g.arr).sum(-1, keepdims=True)
    return (ops.const((grad * gx).astype(alpha.dtype)),)


DIRICHLET = Op("_Dirichlet", lambda a: rng.generator().dirichlet(a), _dirichlet_bwd, ("out", 0),
               node="_DirichletBackward")


def dirichlet(concentration: Tensor) -> Tensor:
    """`_Dirichlet.apply(concentration)`: PyTorch's draws, differentiable in the concentration."""
    return apply(DIRICHLET, concentration)


# ----------------------------------------------------------------------- xlogy


def _xlogy_np(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(a == 0, np.zeros((), a.dtype), a * np.log(b))
    return np.where(np.isnan(b), b, out).astype(a.dtype)


def _xlogy_bwd(c: Any, g: Tensor) -> tuple[Tensor | None, Tensor | None]:
    """d/da = xlogy(a != 0, b), d/db = a / b (PyTorch's formulas)."""
    a, b = c.saved[0], c.saved[1]
    ga = gb = None
    if c.needs[0]:
        ga = ops.sum_to(g * apply(XLOGY, ops.const((a.arr != 0).astype(a.arr.dtype)), b), c.shapes[0])
    if c.needs[1]:
        gb = ops.sum_to(g * a / b, c.shapes[1])
    return ga, gb


XLOGY: Op = Op("Xlogy", _xlogy_np, _xlogy_bwd, (0, 1), node="XlogyBackward0")


def xlogy(a: Any, b: Any) -> Tensor:
    """a * log(b), 0 where a == 0 (the distributions' log densities use it)."""
    x, y = ops._float_operands(a, b)
    return apply(XLOGY, x, y)


# ------------------------------------------------------------------ tril, triu


def _triangle_mask(shape: tuple, diagonal: int, lower: bool) -> np.ndarray:
    rows, cols = shape[-2:]
    ones = np.ones((rows, cols), bool)
    return np.tril(ones, diagonal) if lower else np.triu(ones, diagonal)


TRIANGLE: Op = Op("Tril", lambda a, diagonal, lower: np.where(_triangle_mask(a.shape, diagonal, lower), a,
                                                        np.zeros((), a.dtype)),
              lambda c, g: (apply(TRIANGLE, g, diagonal=c.attrs["diagonal"], lower=c.attrs["lower"]),))


def tril(a: Tensor, diagonal: int = 0) -> Tensor:
    return apply(TRIANGLE, a, diagonal=diagonal, lower=True)


def triu(a: Tensor, diagonal: int = 0) -> Tensor:
    return apply(TRIANGLE, a, diagonal=diagonal, lower=False)


# ----------------------------------------------------------------------- cdist


def cdist(x1: Tensor, x2: Tensor, p: float = 2.0, compute_mode: Any = None) -> Tensor:
    """Pairwise p-norm distances over the last dimension, batched over the leading ones."""
    diff = ops.unsqueeze(x1, -2) - ops.unsqueeze(x2, -3)
    if p == 2:
        return ops.norm(diff, 2, -1)
    if p == 1:
        return ops.sum(ops.abs(diff), -1)
    raise NotSupportedByEngine(f"torch.cdist with p={p!r}")
