"""The op table in `tapelint/ops.py` agrees with what PyTorch 2.13 measurably saves.

Two checks:

1. Against `reference/torch/torch-saved-ops.json` (202 measured cases, kept in
   the repository; see `torch_reference.py`):
   every Python spelling of a case (`api`: `torch.exp`, `Tensor.exp`, `F.relu`,
   `nn.Linear`, `*`, ...) maps to a table entry whose NOTHING / TENSORS verdict
   matches the case's measured `second_backward_fails`.
2. Against real PyTorch (skipped without torch): every NOTHING entry of
   FUNCTIONS, OPERATORS and MODULES, and a broad sample of TENSORS entries, is
   built as a tiny graph; a second backward must fail iff the entry says TENSORS.

Conditional ops. Some calls save tensors in one configuration and nothing in
another. The table keys on the name only, so it must give the conservative
answer, TENSORS (a false "nothing" would hide a real failure). Measured
surviving configurations, accepted only for these cases:

* `F.dropout` / `nn.Dropout` in eval or with p=0: no node at all (identity);
* `F.linear` / `nn.Linear` when only the bias requires grad (addmm leaves
  mat1/mat2 unsaved);
* `F.adaptive_avg_pool2d(x, 1)` / `nn.AdaptiveAvgPool2d(1)`: lowered to mean;
* `torch.einsum` that only sums or permutes;
* (checked in 2.) `fmod` / `remainder` / `%` / `lerp` with a Python-scalar
  operand or weight: the scalar is kept as a number, not a tensor;
* (checked in 2.) `F.interpolate` / `upsample` / `nn.Upsample`: every mode
  survives except `area`, which lowers to adaptive_avg_pool (saves its input).
"""

from __future__ import annotations

import pytest
from torch_reference import saved_op_cases

from tapelint import ops
from tapelint.ops import Saves

# Cases whose op survives a second backward in the measured configuration but
# saves tensors in others: the table must say TENSORS (see module docstring).
CONDITIONAL_CASES = {
    "dropout_train_p0": "F.dropout with p=0 returns its input",
    "dropout_eval": "F.dropout in eval returns its input",
    "linear[b]": "addmm with only the bias tracked saves no operand",
    "nn.Linear[bias-only trainable]": "addmm with only the bias tracked saves no operand",
    "adaptive_avg_pool2d": "adaptive_avg_pool2d(x, 1) lowers to mean",
    "einsum_sum": "an einsum that only sums",
    "einsum_transpose": "an einsum that only permutes",
}

# Cases that are an expression of several ops (not several spellings of one op),
# with the tracked ops of the expression: the second backward fails iff at least
# one of them saves tensors.
COMPOSITE_CASES = {
    "weighted_loss_sum": ("+", "*"),  # l0 + 0.1 * l1
    "loss_item_mean": ("+", "/"),  # (l0 + l1) / 2
    "stack_losses_mean": ("torch.stack", "Tensor.mean"),  # torch.stack(ls).mean()
    "stack_losses_sum": ("torch.stack", "Tensor.sum"),  # torch.stack(ls).sum()
    "detach_then_op_with_param": ("*",),  # x.detach() * w: only the mul is on the graph
}

# `api` spellings that are not a named call, so no table row can hold them.
NOT_A_CALL = {
    "x[i]", "x[a:b]", "x[None]", "x[idx_tensor]", "x[list]", "x[mask]",  # subscripts: decided by the analysis
    "list(x)",  # iteration over a tensor
    "Tensor.T",  # attribute access
    "torch.index",  # the aten name of advanced indexing; no Python function of that name
}

DUNDER_OPERATORS = {
    "__add__": "+", "__radd__": "+", "__iadd__": "+",
    "__sub__": "-", "__rsub__": "-", "__isub__": "-",
    "__mul__": "*", "__rmul__": "*", "__imul__": "*",
    "__truediv__": "/", "__rtruediv__": "/", "__itruediv__": "/",
    "__pow__": "**", "__rpow__": "**",
    "__matmul__": "@", "__rmatmul__": "@",
}
COMPARISONS = {">", "<", ">=", "<=", "==", "!="}


def classify(api: str):
    """Map one `api` spelling to ("saves", Saves) | ("untracking", bool) | ("skip", reason)."""
    if api in NOT_A_CALL:
        return ("skip", "not a named call")
    if api in COMPARISONS:
        return ("skip", "comparison operator: untracked result")
    if api in ("-x", "Tensor.__neg__"):
        return ("saves", ops.UNARY_OPERATORS.get("-", Saves.UNKNOWN))
    if api in ("+=", "-=", "*=", "/="):
        return ("saves", ops.operator_saves(api[0]))
    head = api.split(" ")[0]
    if head in ops.OPERATORS:  # "+", "* (rmul)", ...
        return ("saves", ops.operator_saves(head))
    if api in ("abs()", "sum()", "builtins.sum"):  # builtins that dispatch to the tensor op
        return ("saves", ops.function_saves(api.rstrip("()").split(".")[-1]))
    if api.startswith("nn."):
        cls = api[3:].split("(")[0].split(" ")[0]
        return ("saves", ops.module_saves(cls))
    name = api.split("(")[0].split(" ")[0].split(".")[-1]
    if name in DUNDER_OPERATORS:
        return ("saves", ops.operator_saves(DUNDER_OPERATORS[name]))
    if name in ops.UNTRACKING:
        return ("untracking", True)
    return ("saves", ops.function_saves(name))


CASES = saved_op_cases()


def test_reference_is_complete():
    assert len(CASES) >= 200
    for key, case in CASES.items():
        assert "error" not in case, key
        assert isinstance(case["second_backward_fails"], bool), key
        assert case["api"], key


@pytest.mark.parametrize("key", sorted(CASES))
def test_table_matches_measured_case(key):
    case = CASES[key]
    fails = case["second_backward_fails"]
    verdicts = {api: classify(api) for api in case["api"]}
    saves = {api: v[1] for api, v in verdicts.items() if v[0] == "saves"}
    unknown = [api for api, s in saves.items() if s is Saves.UNKNOWN]
    assert not unknown, f"{key}: no table entry for {unknown}"

    if not case["output_requires_grad"]:
        # No graph at all (x.detach() * 2, argmax, x > 0): the call must be a sanitizer.
        named = [api for api, v in verdicts.items() if v[0] != "skip"]
        assert named, key
        for api in named:
            assert verdicts[api] == ("untracking", True), f"{key}: {api} yields an untracked result"
        return

    if key in COMPOSITE_CASES:
        expression = {api: classify(api)[1] for api in COMPOSITE_CASES[key]}
        assert Saves.UNKNOWN not in expression.values(), f"{key}: {expression}"
        assert any(s is Saves.TENSORS for s in expression.values()) == fails, (
            f"{key}: {case['expr']} fails={fails}, table {expression}"
        )
        return

    if key in CONDITIONAL_CASES:
        assert not fails, f"{key} is listed as a surviving configuration but failed"
        for api, s in saves.items():
            assert s is Saves.TENSORS, f"{key} ({CONDITIONAL_CASES[key]}): {api} must stay TENSORS (conservative)"
        return

    want = Saves.TENSORS if fails else Saves.NOTHING
    for api, s in saves.items():
        assert s is want, f"{key}: {case['expr']} second backward fails={fails}, but {api} -> {s.value}"
    untracking = [api for api, v in verdicts.items() if v[0] == "untracking"]
    assert not untracking, f"{key}: {untracking} listed as untracking, but the measured output is tracked"


# --- 2. against real PyTorch ----------------------------------------------------------------


def _builders(torch, F, nn):
    """name -> f(x, w) returning a tensor or a sequence of tensors built from leaves x and w.

    x and w are 2x3 float32 leaves with values in [0.5, 1.5) that require grad.
    """
    idx = torch.tensor([0, 1])
    f64 = torch.zeros(1, dtype=torch.float64)
    return {
        # NOTHING
        "add": lambda x, w: torch.add(x, w), "sub": lambda x, w: torch.sub(x, w),
        "subtract": lambda x, w: torch.subtract(x, w), "rsub": lambda x, w: torch.rsub(x, w),
        "neg": lambda x, w: x.neg(), "negative": lambda x, w: torch.negative(x), "sign": lambda x, w: x.sign(),
        "sum": lambda x, w: x.sum(1), "mean": lambda x, w: x.mean(0), "nansum": lambda x, w: x.nansum(),
        "cumsum": lambda x, w: x.cumsum(1),
        "reshape": lambda x, w: x.reshape(3, 2), "view": lambda x, w: x.view(6), "view_as": lambda x, w: x.view_as(w),
        "reshape_as": lambda x, w: x.reshape_as(w), "transpose": lambda x, w: x.transpose(0, 1),
        "permute": lambda x, w: x.permute(1, 0), "t": lambda x, w: x.t(), "flatten": lambda x, w: x.flatten(),
        "unflatten": lambda x, w: x.unflatten(1, (3, 1)), "squeeze": lambda x, w: x.unsqueeze(0).squeeze(0),
        "unsqueeze": lambda x, w: x.unsqueeze(1), "expand": lambda x, w: x.expand(2, 2, 3),
        "expand_as": lambda x, w: x[:1].expand_as(w), "repeat": lambda x, w: x.repeat(2, 1),
        "flip": lambda x, w: x.flip(0), "fliplr": lambda x, w: x.fliplr(), "flipud": lambda x, w: x.flipud(),
        "roll": lambda x, w: x.roll(1, 1), "narrow": lambda x, w: x.narrow(1, 0, 2),
        "movedim": lambda x, w: x.movedim(0, 1), "moveaxis": lambda x, w: x.moveaxis(0, 1),
        "swapaxes": lambda x, w: x.swapaxes(0, 1), "swapdims": lambda x, w: x.swapdims(0, 1),
        "select": lambda x, w: x.select(0, 1), "pad": lambda x, w: F.pad(x, (1, 1)),
        "cat": lambda x, w: torch.cat([x, w]), "concat": lambda x, w: torch.concat([x, w]),
        "concatenate": lambda x, w: torch.concatenate([x, w]), "stack": lambda x, w: torch.stack([x, w]),
        "hstack": lambda x, w: torch.hstack([x, w]), "vstack": lambda x, w: torch.vstack([x, w]),
        "split": lambda x, w: x.split(1, 0), "chunk": lambda x, w: x.chunk(3, 1), "unbind": lambda x, w: x.unbind(0),
        "tensor_split": lambda x, w: x.tensor_split(2, 1),
        "clone": lambda x, w: x.clone(), "contiguous": lambda x, w: x.t().contiguous(),
        "to": lambda x, w: x.to(torch.float64), "float": lambda x, w: x.double().float(),
        "double": lambda x, w: x.double(), "half": lambda x, w: x.half(), "bfloat16": lambda x, w: x.bfloat16(),
        "type_as": lambda x, w: x.type_as(f64), "cpu": lambda x, w: x.to(torch.float64).cpu(),
        "floor": lambda x, w: x.floor(), "ceil": lambda x, w: x.ceil(), "round": lambda x, w: x.round(),
        "trunc": lambda x, w: x.trunc(), "frac": lambda x, w: x.frac(),
        "unfold": lambda x, w: F.unfold(x[None, None], (2, 2)),
        "fold": lambda x, w: F.fold(x[None], (1, 4), (1, 2)),
        "affine_grid": lambda x, w: F.affine_grid(x[None], (1, 1, 2, 2), align_corners=False),
        # TENSORS (a sample: each in a configuration that saves)
        "mul": lambda x, w: torch.mul(x, w), "multiply": lambda x, w: torch.multiply(x, 2.0),
        "div": lambda x, w: torch.div(x, w), "divide": lambda x, w: torch.divide(x, 2.0),
        "true_divide": lambda x, w: torch.true_divide(x, w), "pow": lambda x, w: x.pow(2),
        "square": lambda x, w: x.square(), "float_power": lambda x, w: x.float_power(2),
        "fmod": lambda x, w: x.fmod(w), "remainder": lambda x, w: x.remainder(w),
        "maximum": lambda x, w: torch.maximum(x, w), "minimum": lambda x, w: torch.minimum(x, w),
        "fmax": lambda x, w: torch.fmax(x, w), "fmin": lambda x, w: torch.fmin(x, w),
        "where": lambda x, w: torch.where(x > 1, x, w), "masked_fill": lambda x, w: x.masked_fill(x > 1, 0.0),
        "lerp": lambda x, w: torch.lerp(x, w, w), "addcmul": lambda x, w: torch.addcmul(x, x, w),
        "addcdiv": lambda x, w: torch.addcdiv(x, x, w),
        "abs": lambda x, w: x.abs(), "exp": lambda x, w: x.exp(), "exp2": lambda x, w: x.exp2(),
        "expm1": lambda x, w: x.expm1(), "log": lambda x, w: x.log(), "log2": lambda x, w: x.log2(),
        "log10": lambda x, w: x.log10(), "log1p": lambda x, w: x.log1p(), "sqrt": lambda x, w: x.sqrt(),
        "rsqrt": lambda x, w: x.rsqrt(), "reciprocal": lambda x, w: x.reciprocal(), "sin": lambda x, w: x.sin(),
        "cos": lambda x, w: x.cos(), "tan": lambda x, w: x.tan(), "asin": lambda x, w: (x / 2).asin(),
        "acos": lambda x, w: (x / 2).acos(), "atan": lambda x, w: x.atan(), "atan2": lambda x, w: torch.atan2(x, w),
        "sinh": lambda x, w: x.sinh(), "cosh": lambda x, w: x.cosh(), "tanh": lambda x, w: x.tanh(),
        "sigmoid": lambda x, w: x.sigmoid(), "logsigmoid": lambda x, w: F.logsigmoid(x),
        "relu": lambda x, w: F.relu(x), "relu6": lambda x, w: F.relu6(x), "leaky_relu": lambda x, w: F.leaky_relu(x),
        "gelu": lambda x, w: F.gelu(x), "silu": lambda x, w: F.silu(x), "mish": lambda x, w: F.mish(x),
        "softplus": lambda x, w: F.softplus(x), "elu": lambda x, w: F.elu(x), "selu": lambda x, w: F.selu(x),
        "celu": lambda x, w: F.celu(x), "hardtanh": lambda x, w: F.hardtanh(x),
        "hardswish": lambda x, w: F.hardswish(x), "hardsigmoid": lambda x, w: F.hardsigmoid(x),
        "clamp": lambda x, w: x.clamp(0.6, 1.2), "clip": lambda x, w: x.clip(0.6, 1.2),
        "clamp_min": lambda x, w: x.clamp_min(0.7), "clamp_max": lambda x, w: x.clamp_max(1.2),
        "erf": lambda x, w: x.erf(), "erfc": lambda x, w: x.erfc(), "erfinv": lambda x, w: (x - 1).erfinv(),
        "lgamma": lambda x, w: x.lgamma(), "digamma": lambda x, w: x.digamma(),
        "var": lambda x, w: x.var(), "std": lambda x, w: x.std(), "var_mean": lambda x, w: torch.var_mean(x),
        "std_mean": lambda x, w: torch.std_mean(x), "norm": lambda x, w: x.norm(),
        "vector_norm": lambda x, w: torch.linalg.vector_norm(x, dim=1),
        "matrix_norm": lambda x, w: torch.linalg.matrix_norm(x), "dist": lambda x, w: torch.dist(x, w),
        "max": lambda x, w: x.max(), "min": lambda x, w: x.min(), "amax": lambda x, w: x.amax(1),
        "amin": lambda x, w: x.amin(1), "logsumexp": lambda x, w: x.logsumexp(1), "prod": lambda x, w: x.prod(),
        "softmax": lambda x, w: x.softmax(1), "log_softmax": lambda x, w: x.log_softmax(1),
        "softmin": lambda x, w: F.softmin(x, 1), "cumprod": lambda x, w: x.cumprod(1),
        "cummax": lambda x, w: x.cummax(1).values, "cummin": lambda x, w: x.cummin(1).values,
        "sort": lambda x, w: x.sort(1).values, "topk": lambda x, w: x.topk(2, 1).values,
        "kthvalue": lambda x, w: x.kthvalue(2, 1).values, "median": lambda x, w: x.median(),
        "quantile": lambda x, w: x.quantile(0.5),
        "matmul": lambda x, w: x.matmul(w.t()), "mm": lambda x, w: x.mm(w.t()), "bmm": lambda x, w: x[None].bmm(w.t()[None]),
        "mv": lambda x, w: x.mv(w[0]), "dot": lambda x, w: x[0].dot(w[0]), "vdot": lambda x, w: x[0].vdot(w[0]),
        "inner": lambda x, w: torch.inner(x, w), "outer": lambda x, w: torch.outer(x[0], w[0]),
        "einsum": lambda x, w: torch.einsum("ij,kj->ik", x, w), "addmm": lambda x, w: torch.addmm(x[:, :2], x, w.t()),
        "tensordot": lambda x, w: torch.tensordot(x, w, dims=([1], [1])), "kron": lambda x, w: torch.kron(x, w),
        "linear": lambda x, w: F.linear(x, w), "baddbmm": lambda x, w: torch.baddbmm(x[None, :, :2], x[None], w.t()[None]),
        "conv1d": lambda x, w: F.conv1d(x[None], w[:, :2, None]),
        "conv2d": lambda x, w: F.conv2d(x[None, None], w[None, None, :, :2]),
        "batch_norm": lambda x, w: F.batch_norm(x, None, None, training=True),
        "layer_norm": lambda x, w: F.layer_norm(x, (3,)), "group_norm": lambda x, w: F.group_norm(x, 1),
        "instance_norm": lambda x, w: F.instance_norm(x[None]), "rms_norm": lambda x, w: F.rms_norm(x, (3,)),
        "local_response_norm": lambda x, w: F.local_response_norm(x[None], 2), "normalize": lambda x, w: F.normalize(x),
        "dropout": lambda x, w: F.dropout(x, 0.5, training=True),
        "dropout1d": lambda x, w: F.dropout1d(x[None], 0.5, training=True),
        "alpha_dropout": lambda x, w: F.alpha_dropout(x, 0.5, training=True),
        "embedding": lambda x, w: F.embedding(idx, x),
        "cross_entropy": lambda x, w: F.cross_entropy(x, idx), "nll_loss": lambda x, w: F.nll_loss(x, idx),
        "mse_loss": lambda x, w: F.mse_loss(x, w), "l1_loss": lambda x, w: F.l1_loss(x, w),
        "smooth_l1_loss": lambda x, w: F.smooth_l1_loss(x, w), "huber_loss": lambda x, w: F.huber_loss(x, w),
        "binary_cross_entropy": lambda x, w: F.binary_cross_entropy(x / 2, w.detach() / 2),
        "binary_cross_entropy_with_logits": lambda x, w: F.binary_cross_entropy_with_logits(x, w.detach() / 2),
        "kl_div": lambda x, w: F.kl_div(x.log(), w.detach(), reduction="batchmean"),
        "poisson_nll_loss": lambda x, w: F.poisson_nll_loss(x, w.detach()),
        "soft_margin_loss": lambda x, w: F.soft_margin_loss(x, w.detach().sign()),
        "index_select": lambda x, w: x.index_select(1, idx), "gather": lambda x, w: x.gather(1, idx[None].expand(2, 2)),
        "take": lambda x, w: x.take(idx), "take_along_dim": lambda x, w: torch.take_along_dim(x, idx[None].expand(2, 2), 1),
        "masked_select": lambda x, w: x.masked_select(x > 1),
        "cosine_similarity": lambda x, w: F.cosine_similarity(x, w), "pairwise_distance": lambda x, w: F.pairwise_distance(x, w),
        "cdist": lambda x, w: torch.cdist(x, w),
        "max_pool1d": lambda x, w: F.max_pool1d(x[None], 2), "avg_pool1d": lambda x, w: F.avg_pool1d(x[None], 2),
        "max_pool2d": lambda x, w: F.max_pool2d(x[None, None], 2), "avg_pool2d": lambda x, w: F.avg_pool2d(x[None, None], 2),
        "adaptive_avg_pool2d": lambda x, w: F.adaptive_avg_pool2d(x[None, None], 2),
        "adaptive_max_pool2d": lambda x, w: F.adaptive_max_pool2d(x[None, None], 1),
        "interpolate": lambda x, w: F.interpolate(x[None, None], size=(1, 2), mode="area"),
        "scaled_dot_product_attention": lambda x, w: F.scaled_dot_product_attention(x[None], w[None], w[None]),
        "glu": lambda x, w: F.glu(torch.cat([x, w], 1)), "logit": lambda x, w: torch.logit(x / 2),
        "xlogy": lambda x, w: torch.xlogy(x, w), "sinc": lambda x, w: x.sinc(), "hypot": lambda x, w: torch.hypot(x, w),
        "relu_": lambda x, w: x.clone().relu_(),
        "index_add": lambda x, w: x.index_add(1, idx, w[:, :2]),
        "index_copy": lambda x, w: x.index_copy(1, idx, w[:, :2]),
        "index_put": lambda x, w: x.index_put((idx,), w[:2]),
        "scatter": lambda x, w: x.scatter(1, idx[None].expand(2, 2), w[:, :2]),
        "scatter_add": lambda x, w: x.scatter_add(1, idx[None].expand(2, 2), w[:, :2]),
        "dropout2d": lambda x, w: F.dropout2d(x[None, :, :, None], 0.5, training=True),
        "conv_transpose1d": lambda x, w: F.conv_transpose1d(x[None], w[:, :2, None]),
        "bilinear": lambda x, w: F.bilinear(x, w, x[:1, None, :].expand(1, 3, 3)),
        "adaptive_avg_pool1d": lambda x, w: F.adaptive_avg_pool1d(x[None], 2),
        "adaptive_max_pool1d": lambda x, w: F.adaptive_max_pool1d(x[None], 2),
        "upsample": lambda x, w: F.upsample(x[None, None], size=(1, 2), mode="area"),
        "grid_sample": lambda x, w: F.grid_sample(x[None, None], w[None, :, :2, None].reshape(1, 1, 2, 2) - 1.0, align_corners=False),
        "margin_ranking_loss": lambda x, w: F.margin_ranking_loss(x, w, torch.ones(2, 3)),
        "hinge_embedding_loss": lambda x, w: F.hinge_embedding_loss(x, -torch.ones(2, 3)),
        "cosine_embedding_loss": lambda x, w: F.cosine_embedding_loss(x, w, torch.ones(2)),
        "triplet_margin_loss": lambda x, w: F.triplet_margin_loss(x, w, w.flip(0)),
        "gaussian_nll_loss": lambda x, w: F.gaussian_nll_loss(x, w.detach(), torch.ones(2, 3)),
    }


def _second_backward_fails(torch, build):
    torch.manual_seed(0)
    x = (torch.rand(2, 3) + 0.5).requires_grad_(True)
    w = (torch.rand(2, 3) + 0.5).requires_grad_(True)
    out = build(x, w)
    pieces = list(out) if isinstance(out, (tuple, list)) else [out]
    pieces = [p for p in pieces if isinstance(p, torch.Tensor) and p.requires_grad]
    assert pieces, "the case produced no tracked tensor"
    loss = sum(p.float().sum() for p in pieces)  # sum and + save nothing
    loss.backward()
    try:
        loss.backward()
    except RuntimeError as exc:
        assert "Trying to backward through the graph a second time" in str(exc), str(exc)
        return True
    return False


def test_builders_cover_every_nothing_entry():
    torch = pytest.importorskip("torch")
    import torch.nn as nn
    import torch.nn.functional as F

    builders = _builders(torch, F, nn)
    nothing = {n for n, s in ops.FUNCTIONS.items() if s is Saves.NOTHING} - {"cuda"}  # no GPU here
    assert nothing <= builders.keys(), sorted(nothing - builders.keys())
    tensors = [n for n in builders if ops.FUNCTIONS.get(n) is Saves.TENSORS]
    assert len(tensors) >= 100, "sample of TENSORS entries too small"
    stray = [n for n in builders if n not in ops.FUNCTIONS]
    assert not stray, f"builders for names the table does not know: {stray}"


def _function_names():
    return sorted(n for n in ops.FUNCTIONS if n != "cuda")


@pytest.mark.filterwarnings("ignore:`nn.functional.upsample` is deprecated")
@pytest.mark.parametrize("name", _function_names())
def test_function_entry_matches_real_torch(name):
    torch = pytest.importorskip("torch")
    import torch.nn as nn
    import torch.nn.functional as F

    builders = _builders(torch, F, nn)
    if name not in builders:
        assert ops.FUNCTIONS[name] is Saves.TENSORS  # only TENSORS entries may go unsampled
        pytest.skip(f"{name}: no tiny builder (TENSORS, not sampled)")
    fails = _second_backward_fails(torch, builders[name])
    want = ops.FUNCTIONS[name] is Saves.TENSORS
    assert fails == want, f"{name}: table says {ops.FUNCTIONS[name].value}, but a second backward {'fails' if fails else 'succeeds'}"


@pytest.mark.parametrize("symbol", sorted(ops.OPERATORS))
def test_operator_entry_matches_real_torch(symbol):
    torch = pytest.importorskip("torch")
    if symbol == "//":
        # floor division has no derivative at all in PyTorch: nothing to walk twice.
        x = (torch.rand(2, 3) + 0.5).requires_grad_(True)
        with pytest.raises(RuntimeError, match="not implemented"):
            (x // 2).sum().backward()
        return
    binary = {
        "+": lambda x, w: x + w, "-": lambda x, w: x - w, "*": lambda x, w: x * 2, "/": lambda x, w: x / 2,
        "%": lambda x, w: x % w, "**": lambda x, w: x ** 2, "@": lambda x, w: x @ w.t(),
    }
    fails = _second_backward_fails(torch, binary[symbol])
    assert fails == (ops.OPERATORS[symbol] is Saves.TENSORS), symbol


@pytest.mark.parametrize("symbol", sorted(ops.UNARY_OPERATORS))
def test_unary_operator_entry_matches_real_torch(symbol):
    torch = pytest.importorskip("torch")
    build = {"-": lambda x, w: -x, "+": lambda x, w: +x}[symbol]
    x = (torch.rand(2) + 0.5).requires_grad_(True)
    out = build(x, None)
    if out is x:  # unary plus returns its operand: no node, nothing to free
        assert ops.UNARY_OPERATORS[symbol] is Saves.NOTHING
        return
    assert _second_backward_fails(torch, build) == (ops.UNARY_OPERATORS[symbol] is Saves.TENSORS)


def _module_cases(torch, nn):
    """class name -> () -> (module, input, extra call args, whether the input requires grad).

    Parametric modules get an untracked input (their parameters make the output
    tracked); parameter-free ones get a tracked input.
    """
    r = torch.rand
    return {
        "Identity": lambda: (nn.Identity(), r(2, 3), (), True),
        "Flatten": lambda: (nn.Flatten(), r(2, 3, 1), (), True),
        "Unflatten": lambda: (nn.Unflatten(1, (3, 1)), r(2, 3), (), True),
        "ZeroPad2d": lambda: (nn.ZeroPad2d(1), r(1, 2, 3), (), True),
        "ConstantPad1d": lambda: (nn.ConstantPad1d(1, 0.5), r(2, 3), (), True),
        "ConstantPad2d": lambda: (nn.ConstantPad2d(1, 0.5), r(1, 2, 3), (), True),
        "Linear": lambda: (nn.Linear(3, 2), r(2, 3), (), False),
        "Bilinear": lambda: (nn.Bilinear(3, 3, 2), r(2, 3), (r(2, 3),), False),
        "Conv1d": lambda: (nn.Conv1d(2, 2, 2), r(1, 2, 3), (), False),
        "Conv2d": lambda: (nn.Conv2d(1, 1, 2), r(1, 1, 3, 3), (), False),
        "RNN": lambda: (nn.RNN(3, 2), r(2, 1, 3), (), False),
        "GRU": lambda: (nn.GRU(3, 2), r(2, 1, 3), (), False),
        "LSTM": lambda: (nn.LSTM(3, 2), r(2, 1, 3), (), False),
        "RNNCell": lambda: (nn.RNNCell(3, 2), r(2, 3), (), False),
        "GRUCell": lambda: (nn.GRUCell(3, 2), r(2, 3), (), False),
        "LSTMCell": lambda: (nn.LSTMCell(3, 2), r(2, 3), (), False),
        "Embedding": lambda: (nn.Embedding(4, 2), torch.tensor([0, 3]), (), False),
        "LayerNorm": lambda: (nn.LayerNorm(3), r(2, 3), (), False),
        "GroupNorm": lambda: (nn.GroupNorm(1, 2), r(2, 2, 3), (), False),
        "BatchNorm1d": lambda: (nn.BatchNorm1d(3), r(2, 3), (), False),
        "PReLU": lambda: (nn.PReLU(), r(2, 3), (), False),
        "Sequential": lambda: (nn.Sequential(nn.Linear(3, 3), nn.Tanh()), r(2, 3), (), False),
        "MultiheadAttention": lambda: (nn.MultiheadAttention(4, 2), r(2, 1, 4), (r(2, 1, 4), r(2, 1, 4)), False),
        "ReLU": lambda: (nn.ReLU(), r(2, 3), (), True),
        "Tanh": lambda: (nn.Tanh(), r(2, 3), (), True),
        "Sigmoid": lambda: (nn.Sigmoid(), r(2, 3), (), True),
        "GELU": lambda: (nn.GELU(), r(2, 3), (), True),
        "Softmax": lambda: (nn.Softmax(dim=1), r(2, 3), (), True),
        "LogSoftmax": lambda: (nn.LogSoftmax(dim=1), r(2, 3), (), True),
        "Dropout": lambda: (nn.Dropout(0.5), r(2, 3), (), True),
        "MaxPool1d": lambda: (nn.MaxPool1d(2), r(1, 2, 4), (), True),
        "AvgPool1d": lambda: (nn.AvgPool1d(2), r(1, 2, 4), (), True),
        "MSELoss": lambda: (nn.MSELoss(), r(2, 3), (r(2, 3),), True),
        "L1Loss": lambda: (nn.L1Loss(), r(2, 3), (r(2, 3),), True),
        "CrossEntropyLoss": lambda: (nn.CrossEntropyLoss(), r(2, 3), (torch.tensor([0, 2]),), True),
        "BCEWithLogitsLoss": lambda: (nn.BCEWithLogitsLoss(), r(2, 3), (r(2, 3),), True),
    }


def test_module_builders_cover_every_nothing_entry():
    torch = pytest.importorskip("torch")
    import torch.nn as nn

    cases = _module_cases(torch, nn)
    nothing = {n for n, s in ops.MODULES.items() if s is Saves.NOTHING}
    assert nothing <= cases.keys(), sorted(nothing - cases.keys())
    assert all(n in ops.MODULES for n in cases), [n for n in cases if n not in ops.MODULES]


@pytest.mark.parametrize("cls", sorted(ops.MODULES))
def test_module_entry_matches_real_torch(cls):
    torch = pytest.importorskip("torch")
    import torch.nn as nn

    cases = _module_cases(torch, nn)
    if cls not in cases:
        assert ops.MODULES[cls] is Saves.TENSORS  # only TENSORS entries may go unsampled
        pytest.skip(f"nn.{cls}: no tiny builder (TENSORS, not sampled)")
    torch.manual_seed(0)
    module, inp, extra, track = cases[cls]()
    module.train()
    if track:
        inp = inp.requires_grad_(True)
    out = module(inp, *extra)
    first = out if isinstance(out, torch.Tensor) else out[0]  # RNNs and attention return tuples
    assert first.requires_grad, f"nn.{cls}: output not tracked"
    loss = first.sum()
    loss.backward()
    try:
        loss.backward()
        fails = False
    except RuntimeError as exc:
        assert "Trying to backward through the graph a second time" in str(exc), str(exc)
        fails = True
    assert fails == (ops.MODULES[cls] is Saves.TENSORS), f"nn.{cls}: table says {ops.MODULES[cls].value}"
