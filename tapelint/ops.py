"""Which operations save tensors for backward (PyTorch 2.13, measured).

Source: `reference/torch/torch-saved-ops.json` (202 op cases). Under
torch semantics a second walk through a node fails iff the node saved a
tensor, so this table decides `fails_under`. `tests/test_ops_table.py` checks
every entry against that file, and against real PyTorch when it is installed.

Names are the last component of the call (`x.exp()`, `torch.exp(x)` and
`F.exp(x)` are all `exp`); modules are their class names (`nn.Linear`).
A name in none of these tables is *unknown*: the analysis assumes it saves
tensors and says so in the message. Some module classes save nothing in some
configurations (`nn.Upsample()` in its default mode, `nn.AdaptiveAvgPool2d(1)`,
`nn.Dropout(0.0)`): `MODULE_CONDITIONS` says which, by constructor argument.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Optional, Union

from tapelint.literals import NOT_LITERAL


class Saves(str, Enum):
    NOTHING = "nothing"
    TENSORS = "tensors"
    UNKNOWN = "unknown"


# Binary operators (libcst operator class names mapped to their symbols in the analysis).
OPERATORS: dict[str, Saves] = {
    "+": Saves.NOTHING,
    "-": Saves.NOTHING,
    "*": Saves.TENSORS,  # a Python scalar is saved as a 0-dim tensor
    "/": Saves.TENSORS,
    "//": Saves.TENSORS,
    "%": Saves.TENSORS,
    "**": Saves.TENSORS,
    "@": Saves.TENSORS,
}

# Unary operators on a tensor.
UNARY_OPERATORS: dict[str, Saves] = {"-": Saves.NOTHING, "+": Saves.NOTHING}

# Functions and methods whose result is a tracked tensor when an input is.
FUNCTIONS: dict[str, Saves] = {
    **dict.fromkeys(
        (
            # arithmetic that saves only non-tensor values
            "add", "sub", "subtract", "rsub", "neg", "negative", "sign",
            # reductions that need neither values nor indices
            "sum", "mean", "cumsum",
            # views and shape ops
            "reshape", "view", "view_as", "reshape_as", "transpose", "permute", "t",
            "flatten", "unflatten", "squeeze", "unsqueeze", "expand", "expand_as",
            "repeat", "flip", "fliplr", "flipud", "roll", "narrow", "movedim",
            "moveaxis", "swapaxes", "swapdims", "select", "pad",
            # combine and split
            "cat", "concat", "concatenate", "stack", "hstack", "vstack", "split",
            "chunk", "unbind", "tensor_split",
            # copies and casts
            "clone", "contiguous", "to", "float", "double", "half", "bfloat16",
            "type_as", "cpu", "cuda",
            # zero-gradient rounding; frac's gradient is the identity
            "floor", "ceil", "round", "trunc", "frac",
            # linear rearrangements that keep only sizes (measured: Im2Col/Col2Im/
            # Unfold/AffineGridGenerator backward save no tensor)
            "unfold", "fold", "affine_grid",
        ),
        Saves.NOTHING,
    ),
    **dict.fromkeys(
        (
            "mul", "multiply", "div", "divide", "true_divide", "pow", "square",
            "float_power", "fmod", "remainder",
            "maximum", "minimum", "fmax", "fmin", "where", "masked_fill", "lerp",
            "addcmul", "addcdiv",
            "abs", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt",
            "rsqrt", "reciprocal", "sin", "cos", "tan", "asin", "acos", "atan",
            "atan2", "sinh", "cosh", "tanh", "sigmoid", "logsigmoid", "relu", "relu6",
            "relu_", "leaky_relu", "gelu", "silu", "mish", "softplus", "elu", "selu",
            "celu", "hardtanh", "hardswish", "hardsigmoid", "clamp", "clip",
            "clamp_min", "clamp_max", "erf", "erfc", "erfinv", "lgamma", "digamma",
            "nansum", "var", "std", "var_mean", "std_mean", "norm", "vector_norm",
            "matrix_norm", "dist", "max", "min", "amax", "amin", "logsumexp", "prod",
            "softmax", "log_softmax", "softmin", "cumprod", "cummax", "cummin",
            "sort", "topk", "kthvalue", "median", "quantile",
            "matmul", "mm", "bmm", "mv", "dot", "vdot", "inner", "outer", "einsum",
            "addmm", "baddbmm", "tensordot", "kron", "linear", "bilinear",
            "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
            "batch_norm", "layer_norm", "group_norm", "instance_norm", "rms_norm",
            "local_response_norm", "normalize", "dropout", "dropout1d", "dropout2d",
            "alpha_dropout", "embedding", "embedding_bag",
            "cross_entropy", "nll_loss", "mse_loss", "l1_loss", "smooth_l1_loss",
            "huber_loss", "binary_cross_entropy", "binary_cross_entropy_with_logits",
            "kl_div", "cosine_embedding_loss", "margin_ranking_loss",
            "triplet_margin_loss", "poisson_nll_loss", "gaussian_nll_loss",
            "ctc_loss", "hinge_embedding_loss", "soft_margin_loss",
            "index_select", "gather", "take", "take_along_dim", "masked_select",
            "scatter", "scatter_add", "index_add", "index_copy", "index_put",
            "cosine_similarity", "pairwise_distance", "cdist",
            "max_pool1d", "max_pool2d", "max_pool3d", "avg_pool1d", "avg_pool2d",
            "avg_pool3d", "adaptive_max_pool1d", "adaptive_max_pool2d",
            "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d",
            "interpolate", "upsample", "grid_sample",
            "scaled_dot_product_attention", "multi_head_attention_forward",
            "glu", "logit", "xlogy", "sinc", "hypot",
        ),
        Saves.TENSORS,
    ),
}

# Functions and methods that return a tuple (or a named tuple) of tensors, not
# one tensor (`max`, `min`, `median`, `sort` do with a `dim`): the analysis
# keeps them as one node, so it says the value is no tensor (`analysis.shapes`).
TUPLE_RESULTS: frozenset[str] = frozenset((
    "chunk", "split", "tensor_split", "split_with_sizes", "unbind", "hsplit", "vsplit", "dsplit", "topk", "sort",
    "kthvalue", "mode", "median", "max", "min", "aminmax", "unique", "unique_consecutive", "std_mean", "var_mean",
    "cummax", "cummin", "frexp", "svd", "qr", "eig", "eigh", "slogdet", "lu", "lstsq", "meshgrid",
    "broadcast_tensors", "histogram", "nonzero", "lu_unpack", "atleast_1d",
))
# Layers whose call returns a tuple: `out, (h, c) = lstm(x)`, `attn, weights = mha(q, k, v)`.
TUPLE_LAYERS: frozenset[str] = frozenset(("RNN", "LSTM", "GRU", "LSTMCell", "MultiheadAttention"))

# Calls whose result carries no graph: the ancestry is cut (sanitizers) or the
# result is not a tensor at all.
UNTRACKING: frozenset[str] = frozenset(
    (
        "detach", "detach_", "item", "tolist", "numpy", "argmax", "argmin",
        "argsort", "eq", "ne", "lt", "le", "gt", "ge", "isnan", "isinf",
        "isfinite", "nonzero", "size", "dim", "numel", "ndimension", "nelement",
        "data_ptr", "element_size", "is_contiguous", "equal", "allclose",
        "isclose", "any", "all", "count_nonzero", "bincount", "histc", "unique",
        "long", "int", "bool", "byte", "short",
        "zeros_like", "ones_like", "empty_like", "full_like", "rand_like",
        "randn_like", "randint_like", "new_zeros", "new_ones", "new_empty",
        "new_full", "new_tensor",
    )
)

# Attributes of a tensor whose value carries no graph.
UNTRACKING_ATTRIBUTES: frozenset[str] = frozenset(
    ("data", "shape", "dtype", "device", "grad", "is_leaf", "requires_grad", "ndim", "grad_fn")
)

# Attributes of a module that hold no parameter: its buffers (never
# requiring grad) and its configuration and mode. Reading one off a module
# the analysis cannot see into gives no graph value; any other attribute may
# be a submodule or a parameter.
MODULE_STATE_ATTRIBUTES: frozenset[str] = frozenset(
    ("running_mean", "running_var", "num_batches_tracked", "config", "training", "dtype", "device", "eps",
     "momentum")
)

# Builtins whose result is a Python number or string, never a tracked tensor.
UNTRACKING_BUILTINS: frozenset[str] = frozenset(
    ("float", "int", "bool", "str", "repr", "len", "round", "format", "isinstance", "id", "hash")
)

# Containers of modules or of parameters: they own their children's
# parameters (`vars = nn.ParameterList()`, then `F.linear(x, vars[0])`, as
# functional MAML learners keep their weights), but calling one is an error,
# so they have no entry in MODULES.
MODULE_CONTAINERS: frozenset[str] = frozenset(("ModuleList", "ModuleDict", "ParameterList", "ParameterDict"))

# Module classes that own parameters: their output is tracked whatever the
# input, and every callable one of them saves tensors for backward.
PARAMETRIC_MODULES: frozenset[str] = MODULE_CONTAINERS | frozenset(
    (
        "Linear", "Bilinear", "LazyLinear", "Conv1d", "Conv2d", "Conv3d",
        "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d", "LazyConv2d",
        "RNN", "LSTM", "GRU", "RNNCell", "LSTMCell", "GRUCell", "Embedding",
        "EmbeddingBag", "LayerNorm", "GroupNorm", "RMSNorm", "BatchNorm1d",
        "BatchNorm2d", "BatchNorm3d", "MultiheadAttention", "Transformer",
        "TransformerEncoder", "TransformerDecoder", "TransformerEncoderLayer",
        "TransformerDecoderLayer", "PReLU", "Sequential",
    )
)

# `torch.nn` module classes: does calling an instance save tensors? (In the
# configuration the constructor arguments do not change; see MODULE_CONDITIONS.)
MODULES: dict[str, Saves] = {
    **dict.fromkeys(PARAMETRIC_MODULES - MODULE_CONTAINERS, Saves.TENSORS),
    **dict.fromkeys(
        (
            "InstanceNorm1d", "InstanceNorm2d",
            "ReLU", "ReLU6", "LeakyReLU", "GELU", "SiLU", "Mish", "ELU", "SELU",
            "CELU", "Softplus", "Tanh", "Sigmoid", "Hardtanh", "Hardswish",
            "Hardsigmoid", "LogSigmoid", "Softmax", "LogSoftmax", "Softmin",
            "Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout",
            "MaxPool1d", "MaxPool2d", "MaxPool3d", "AvgPool1d", "AvgPool2d",
            "AvgPool3d", "AdaptiveMaxPool2d", "AdaptiveAvgPool1d", "AdaptiveAvgPool2d",
            "Upsample", "CosineSimilarity", "PairwiseDistance",
            "MSELoss", "L1Loss", "SmoothL1Loss", "HuberLoss", "CrossEntropyLoss",
            "NLLLoss", "BCELoss", "BCEWithLogitsLoss", "KLDivLoss",
            "CosineEmbeddingLoss", "MarginRankingLoss", "TripletMarginLoss",
            "PoissonNLLLoss", "GaussianNLLLoss", "CTCLoss", "HingeEmbeddingLoss",
            "SoftMarginLoss",
        ),
        Saves.TENSORS,
    ),
    **dict.fromkeys(("Identity", "Flatten", "Unflatten", "ZeroPad2d", "ConstantPad1d", "ConstantPad2d"), Saves.NOTHING),
}


@dataclass(frozen=True)
class SavesNothingWhen:
    """A module class that saves nothing when one constructor argument (given
    by `keyword` or at `position`, else `default`) is one of `values`."""

    keyword: str
    position: int
    default: object
    values: frozenset[object]
    why: str


_P_ZERO = SavesNothingWhen("p", 0, 0.5, frozenset((0,)), "p=0 returns the input: no node")
# Measured on PyTorch 2.13 (tests/test_ops_table.py builds each configuration).
MODULE_CONDITIONS: dict[str, SavesNothingWhen] = {
    "Upsample": SavesNothingWhen(
        "mode", 2, "nearest", frozenset(("nearest", "nearest-exact", "linear", "bilinear", "bicubic", "trilinear")),
        "interpolation backward keeps only sizes; mode='area' lowers to adaptive_avg_pool, which saves its input"),
    "AdaptiveAvgPool1d": SavesNothingWhen("output_size", 0, None, frozenset((1, (1,))), "output size 1 lowers to mean"),
    "AdaptiveAvgPool2d": SavesNothingWhen("output_size", 0, None, frozenset((1, (1, 1))),
                                          "output size 1 lowers to mean"),
    **dict.fromkeys(("Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout"), _P_ZERO),
}

# Recurrent modules return `(output, hidden)`: the hidden state is what gets carried.
RECURRENT_MODULES: frozenset[str] = frozenset(("RNN", "LSTM", "GRU", "RNNCell", "LSTMCell", "GRUCell"))


def function_saves(name: str) -> Saves:
    """What a call named `name` (last dotted component) saves; an in-place
    variant (`mul_`) saves what its out-of-place twin does."""
    if name not in FUNCTIONS and name.endswith("_"):
        name = name[:-1]
    return FUNCTIONS.get(name, Saves.UNKNOWN)


def operator_saves(symbol: str) -> Saves:
    return OPERATORS.get(symbol, Saves.UNKNOWN)


def module_saves(class_name: str, arguments: Optional[Mapping[Union[int, str], object]] = None) -> Saves:
    """What calling an `nn.<class_name>` instance saves; with the literal
    constructor `arguments` (`tapelint.literals.call_arguments`), the
    configurations of MODULE_CONDITIONS that save nothing are told apart.
    Without them, or with a non-literal value, the conservative entry."""
    condition = MODULE_CONDITIONS.get(class_name)
    if condition is not None and arguments is not None:
        value = arguments.get(condition.keyword, arguments.get(condition.position, condition.default))
        if value is not NOT_LITERAL and _is_one_of(value, condition.values):
            return Saves.NOTHING
    return MODULES.get(class_name, Saves.UNKNOWN)


def _is_one_of(value: object, values: frozenset[object]) -> bool:
    try:
        return value in values and not isinstance(value, bool)
    except TypeError:  # an unhashable literal (a dict, a set of lists)
        return False
