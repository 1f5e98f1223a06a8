"""Tiny graphs for every entry of the op table (`tapelint/ops.py`), written
against a torch-like module: real PyTorch (`tests/test_ops_table.py`) or the
engine's facade (`tests/engine/test_ops_tables_agree.py`), so the same
programs measure both."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import libcst as cst

from tapelint import ops
from tapelint.literals import call_arguments
from tapelint.ops import Saves

SECOND_BACKWARD = "Trying to backward through the graph a second time"


def function_builders(torch: Any, F: Any) -> dict[str, Callable[[Any, Any], Any]]:
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
        "conv3d": lambda x, w: F.conv3d(x.reshape(1, 1, 1, 2, 3), w.reshape(1, 1, 1, 2, 3)[..., :2]),
        "conv_transpose2d": lambda x, w: F.conv_transpose2d(x[None, None], w[None, None, :, :2]),
        "max_pool3d": lambda x, w: F.max_pool3d(x.reshape(1, 1, 1, 2, 3), (1, 2, 2)),
        "avg_pool3d": lambda x, w: F.avg_pool3d(x.reshape(1, 1, 1, 2, 3), (1, 2, 2)),
        "adaptive_avg_pool3d": lambda x, w: F.adaptive_avg_pool3d(x.reshape(1, 1, 1, 2, 3), (1, 1, 2)),
        # x itself as the (T=2, N=1, C=3) log-probabilities: no log_softmax node in between
        "ctc_loss": lambda x, w: F.ctc_loss(x[:, None, :], torch.tensor([[1]]), (2,), (1,)),
        "embedding_bag": lambda x, w: F.embedding_bag(torch.tensor([0, 1, 1]), x, torch.tensor([0, 2])),
        # one head over embed_dim 3: projections cut from w by cat and slicing (which save nothing)
        "multi_head_attention_forward": lambda x, w: F.multi_head_attention_forward(
            x[:, None, :], x[:, None, :], x[:, None, :], 3, 1, torch.cat([w] * 5)[:9], None, None, None, False,
            0.0, torch.cat([w, w])[:3], None, training=True)[0],
    }


def second_backward_fails(torch: Any, build: Callable[[Any, Any], Any]) -> bool:
    torch.manual_seed(0)
    x = (torch.rand(2, 3) + 0.5).requires_grad_(True)
    w = (torch.rand(2, 3) + 0.5).requires_grad_(True)
    out = build(x, w)
    pieces = list(out) if isinstance(out, (tuple, list)) else [out]
    pieces = [p for p in pieces if isinstance(p, torch.Tensor) and p.requires_grad]
    assert pieces, "the case produced no tracked tensor"
    return _second_backward_fails(sum(p.float().sum() for p in pieces))  # sum and + save nothing


def _second_backward_fails(loss: Any) -> bool:
    loss.backward()
    try:
        loss.backward()
    except RuntimeError as exc:
        assert SECOND_BACKWARD in str(exc), str(exc)
        return True
    return False


@dataclass(frozen=True)
class ModuleCase:
    """One module configuration: its constructor as source text (evaluated
    with `nn` in scope, and parsed the way the analysis parses it), the call's
    arguments, and whether the first argument requires grad (parameter-free
    modules get a tracked input; parametric ones an untracked input, their
    parameters make the output tracked)."""

    constructor: str
    inputs: Callable[[Any], tuple]  # torch -> the call's arguments
    track: bool

    @property
    def class_name(self) -> str:
        return self.constructor.split("(")[0].split(".")[-1]

    def table_saves(self) -> Saves:
        """What the table says, given the constructor's literal arguments."""
        call = cst.parse_expression(self.constructor)
        assert isinstance(call, cst.Call)
        return ops.module_saves(self.class_name, call_arguments(call))


def _rand(*shape: int) -> Callable[[Any], tuple]:
    return lambda t: (t.rand(*shape),)


def _pair(*shape: int) -> Callable[[Any], tuple]:
    return lambda t: (t.rand(*shape), t.rand(*shape))


def _signs(t) -> Any:
    return t.tensor([[1.0, -1.0, 1.0], [-1.0, 1.0, -1.0]])


_UPSAMPLE_SHAPES = {"linear": (1, 1, 3), "trilinear": (1, 1, 2, 2, 2)}

MODULE_CASES = (
    ModuleCase("nn.Identity()", _rand(2, 3), True),
    ModuleCase("nn.Flatten()", _rand(2, 3, 1), True),
    ModuleCase("nn.Unflatten(1, (3, 1))", _rand(2, 3), True),
    ModuleCase("nn.ZeroPad2d(1)", _rand(1, 2, 3), True),
    ModuleCase("nn.ConstantPad1d(1, 0.5)", _rand(2, 3), True),
    ModuleCase("nn.ConstantPad2d(1, 0.5)", _rand(1, 2, 3), True),
    # parametric
    ModuleCase("nn.Linear(3, 2)", _rand(2, 3), False),
    ModuleCase("nn.LazyLinear(2)", _rand(2, 3), False),
    ModuleCase("nn.Bilinear(3, 3, 2)", _pair(2, 3), False),
    ModuleCase("nn.Conv1d(2, 2, 2)", _rand(1, 2, 3), False),
    ModuleCase("nn.Conv2d(1, 1, 2)", _rand(1, 1, 3, 3), False),
    ModuleCase("nn.Conv3d(1, 1, 2)", _rand(1, 1, 3, 3, 3), False),
    ModuleCase("nn.LazyConv2d(1, 2)", _rand(1, 1, 3, 3), False),
    ModuleCase("nn.ConvTranspose1d(2, 2, 2)", _rand(1, 2, 3), False),
    ModuleCase("nn.ConvTranspose2d(1, 1, 2)", _rand(1, 1, 3, 3), False),
    ModuleCase("nn.ConvTranspose3d(1, 1, 2)", _rand(1, 1, 2, 2, 2), False),
    ModuleCase("nn.RNN(3, 2)", _rand(2, 1, 3), False),
    ModuleCase("nn.GRU(3, 2)", _rand(2, 1, 3), False),
    ModuleCase("nn.LSTM(3, 2)", _rand(2, 1, 3), False),
    ModuleCase("nn.RNNCell(3, 2)", _rand(2, 3), False),
    ModuleCase("nn.GRUCell(3, 2)", _rand(2, 3), False),
    ModuleCase("nn.LSTMCell(3, 2)", _rand(2, 3), False),
    ModuleCase("nn.Embedding(4, 2)", lambda t: (t.tensor([0, 3]),), False),
    ModuleCase("nn.EmbeddingBag(4, 2)", lambda t: (t.tensor([0, 1, 3]), t.tensor([0, 1])), False),
    ModuleCase("nn.LayerNorm(3)", _rand(2, 3), False),
    ModuleCase("nn.GroupNorm(1, 2)", _rand(2, 2, 3), False),
    ModuleCase("nn.RMSNorm(3)", _rand(2, 3), False),
    ModuleCase("nn.BatchNorm1d(3)", _rand(2, 3), False),
    ModuleCase("nn.BatchNorm2d(2)", _rand(2, 2, 2, 2), False),
    ModuleCase("nn.BatchNorm3d(2)", _rand(2, 2, 2, 2, 2), False),
    ModuleCase("nn.PReLU()", _rand(2, 3), False),
    ModuleCase("nn.Sequential(nn.Linear(3, 3), nn.Tanh())", _rand(2, 3), False),
    ModuleCase("nn.MultiheadAttention(4, 2)", lambda t: (t.rand(2, 1, 4), t.rand(2, 1, 4), t.rand(2, 1, 4)), False),
    ModuleCase("nn.Transformer(d_model=4, nhead=2, num_encoder_layers=1, num_decoder_layers=1, dim_feedforward=8)",
               _pair(2, 1, 4), False),
    ModuleCase("nn.TransformerEncoderLayer(4, 2, 8)", _rand(2, 1, 4), False),
    ModuleCase("nn.TransformerEncoder(nn.TransformerEncoderLayer(4, 2, 8), 1)", _rand(2, 1, 4), False),
    ModuleCase("nn.TransformerDecoderLayer(4, 2, 8)", _pair(2, 1, 4), False),
    ModuleCase("nn.TransformerDecoder(nn.TransformerDecoderLayer(4, 2, 8), 1)", _pair(2, 1, 4), False),
    # parameter-free: activations
    *(ModuleCase(f"nn.{name}()", _rand(2, 3), True) for name in (
        "ReLU", "ReLU6", "LeakyReLU", "GELU", "SiLU", "Mish", "ELU", "SELU", "CELU", "Softplus", "Tanh",
        "Sigmoid", "Hardtanh", "Hardswish", "Hardsigmoid", "LogSigmoid")),
    ModuleCase("nn.Softmax(dim=1)", _rand(2, 3), True),
    ModuleCase("nn.LogSoftmax(dim=1)", _rand(2, 3), True),
    ModuleCase("nn.Softmin(dim=1)", _rand(2, 3), True),
    ModuleCase("nn.InstanceNorm1d(2)", _rand(2, 2, 3), True),
    ModuleCase("nn.InstanceNorm2d(2)", _rand(1, 2, 2, 2), True),
    # dropout: the mask is saved, unless p=0 makes it the identity
    ModuleCase("nn.Dropout()", _rand(2, 3), True),
    ModuleCase("nn.Dropout(1.0)", _rand(2, 3), True),
    ModuleCase("nn.Dropout(0.0)", _rand(2, 3), True),
    ModuleCase("nn.Dropout(p=0)", _rand(2, 3), True),
    ModuleCase("nn.Dropout1d(0.5)", _rand(1, 2, 3), True),
    ModuleCase("nn.Dropout1d(0.0)", _rand(1, 2, 3), True),
    ModuleCase("nn.Dropout2d()", _rand(1, 2, 3, 3), True),
    ModuleCase("nn.Dropout2d(p=0.0)", _rand(1, 2, 3, 3), True),
    ModuleCase("nn.Dropout3d()", _rand(1, 2, 2, 2, 2), True),
    ModuleCase("nn.Dropout3d(0.0)", _rand(1, 2, 2, 2, 2), True),
    ModuleCase("nn.AlphaDropout(0.5)", _rand(2, 3), True),
    ModuleCase("nn.AlphaDropout(0.0)", _rand(2, 3), True),
    # pooling
    ModuleCase("nn.MaxPool1d(2)", _rand(1, 2, 4), True),
    ModuleCase("nn.MaxPool2d(2)", _rand(1, 1, 4, 4), True),
    ModuleCase("nn.MaxPool3d(2)", _rand(1, 1, 2, 2, 2), True),
    ModuleCase("nn.AvgPool1d(2)", _rand(1, 2, 4), True),
    ModuleCase("nn.AvgPool2d(2)", _rand(1, 1, 4, 4), True),
    ModuleCase("nn.AvgPool3d(2)", _rand(1, 1, 2, 2, 2), True),
    ModuleCase("nn.AdaptiveMaxPool2d(1)", _rand(1, 1, 4, 4), True),
    ModuleCase("nn.AdaptiveAvgPool1d(2)", _rand(1, 2, 4), True),
    ModuleCase("nn.AdaptiveAvgPool1d(1)", _rand(1, 2, 4), True),
    ModuleCase("nn.AdaptiveAvgPool2d(2)", _rand(1, 1, 4, 4), True),
    ModuleCase("nn.AdaptiveAvgPool2d((1, 2))", _rand(1, 1, 4, 4), True),
    ModuleCase("nn.AdaptiveAvgPool2d((None, 1))", _rand(1, 1, 4, 4), True),
    ModuleCase("nn.AdaptiveAvgPool2d(1)", _rand(1, 1, 4, 4), True),
    ModuleCase("nn.AdaptiveAvgPool2d(output_size=(1, 1))", _rand(1, 1, 4, 4), True),
    # upsampling: interpolation keeps only sizes, except mode="area" (adaptive average pooling)
    ModuleCase("nn.Upsample(scale_factor=2)", _rand(1, 1, 2, 3), True),
    ModuleCase("nn.Upsample(None, 2, 'area')", _rand(1, 1, 2, 3), True),
    *(ModuleCase(f"nn.Upsample(scale_factor=2, mode={mode!r})", _rand(*_UPSAMPLE_SHAPES.get(mode, (1, 1, 2, 3))),
                 True)
      for mode in ("nearest", "nearest-exact", "linear", "bilinear", "bicubic", "trilinear", "area")),
    # distances and losses
    ModuleCase("nn.CosineSimilarity()", _pair(2, 3), True),
    ModuleCase("nn.PairwiseDistance()", _pair(2, 3), True),
    ModuleCase("nn.MSELoss()", _pair(2, 3), True),
    ModuleCase("nn.L1Loss()", _pair(2, 3), True),
    ModuleCase("nn.SmoothL1Loss()", _pair(2, 3), True),
    ModuleCase("nn.HuberLoss()", _pair(2, 3), True),
    ModuleCase("nn.CrossEntropyLoss()", lambda t: (t.rand(2, 3), t.tensor([0, 2])), True),
    ModuleCase("nn.NLLLoss()", lambda t: (t.rand(2, 3), t.tensor([0, 2])), True),
    ModuleCase("nn.BCELoss()", lambda t: (t.rand(2, 3) * 0.8 + 0.1, t.rand(2, 3)), True),
    ModuleCase("nn.BCEWithLogitsLoss()", _pair(2, 3), True),
    ModuleCase("nn.KLDivLoss(reduction='batchmean')", _pair(2, 3), True),
    ModuleCase("nn.PoissonNLLLoss()", _pair(2, 3), True),
    ModuleCase("nn.GaussianNLLLoss()", lambda t: (t.rand(2, 3), t.rand(2, 3), t.ones(2, 3)), True),
    ModuleCase("nn.CosineEmbeddingLoss()", lambda t: (t.rand(2, 3), t.rand(2, 3), t.ones(2)), True),
    ModuleCase("nn.MarginRankingLoss()", lambda t: (t.rand(2, 3), t.rand(2, 3), t.ones(2, 3)), True),
    ModuleCase("nn.TripletMarginLoss()", lambda t: (t.rand(2, 3), t.rand(2, 3), t.rand(2, 3)), True),
    ModuleCase("nn.HingeEmbeddingLoss()", lambda t: (t.rand(2, 3), _signs(t)), True),
    ModuleCase("nn.SoftMarginLoss()", lambda t: (t.rand(2, 3), _signs(t)), True),
    # (T=5, N=1, C=3) log-probabilities as the leaf itself; one target of length 2
    ModuleCase("nn.CTCLoss()", lambda t: (t.rand(5, 1, 3).log_softmax(2), t.tensor([[1, 2]]), t.tensor([5]),
                                          t.tensor([2])), True),
)


def module_output(torch: Any, case: ModuleCase) -> Any:
    torch.manual_seed(0)
    module = eval(case.constructor, {"nn": torch.nn})  # noqa: S307 - our own constructor text
    module.train()
    args = case.inputs(torch)
    if case.track:
        args = (args[0].requires_grad_(True), *args[1:])
    out = module(*args)
    return out if isinstance(out, torch.Tensor) else out[0]  # RNNs and attention return tuples


def module_second_backward_fails(torch: Any, case: ModuleCase) -> bool:
    """Call the module once, backward its summed output twice."""
    first = module_output(torch, case)
    assert first.requires_grad, f"{case.constructor}: output not tracked"
    return _second_backward_fails(first.sum())
