"""What torch, nn, optim, Lightning and Accelerate calls mean: the one
vocabulary that detection (the interpreter, TL003's classifier) and the fixes
consult, so the two can never disagree about a name.

Names here are canonical dotted names (`torch.no_grad`) where the analysis
resolves imports, and last components (`print`, `sum`) where a call is judged
by what it is called.
"""

from __future__ import annotations

from typing import Optional

import libcst as cst

from tapelint.analysis import cst_nodes

# Tensor constructors: leaves, tracked only with a literal `requires_grad=True`.
FACTORIES = frozenset(
    (
        "tensor", "as_tensor", "from_numpy", "randn", "rand", "randint", "randperm", "zeros",
        "ones", "full", "empty", "arange", "linspace", "logspace", "eye", "normal",
        "zeros_like", "ones_like", "full_like", "empty_like", "rand_like", "randn_like",
        "randint_like", "Tensor", "FloatTensor", "LongTensor", "scalar_tensor", "tril_indices",
    )
)
NO_GRAD_CONTEXTS = frozenset(
    ("torch.no_grad", "torch.inference_mode", "torch.autograd.no_grad", "torch.autograd.inference_mode",
     "torch.autograd.grad_mode.no_grad", "torch.autograd.grad_mode.inference_mode")
)
GRAD_CONTEXTS = frozenset(("torch.enable_grad", "torch.autograd.enable_grad"))
SET_GRAD = frozenset(("torch.set_grad_enabled", "torch.autograd.set_grad_enabled"))
AUTOGRAD_WALKS = frozenset(("torch.autograd.grad", "torch.autograd.backward"))
PARAMETER_CLASSES = frozenset(("torch.nn.Parameter", "torch.nn.parameter.Parameter"))
# Bases of a custom autograd Function: `Cls.apply(x)` is one node of its inputs.
AUTOGRAD_FUNCTION_BASES = frozenset(("torch.autograd.Function", "torch.autograd.function.Function"))
# The submodules a `torch.nn` class builds in its `__init__` (attribute -> class,
# as `named_children()` lists them on PyTorch 2.13; module lists left out): what
# `model.encoder(src)` of an `nn.Transformer` calls. One table per layer's
# structure, so nothing is guessed from an attribute's name.
_ENCODER_LAYER = {"self_attn": "MultiheadAttention", "linear1": "Linear", "linear2": "Linear", "dropout": "Dropout",
                  "norm1": "LayerNorm", "norm2": "LayerNorm", "dropout1": "Dropout", "dropout2": "Dropout"}
TORCH_SUBMODULES: dict[str, dict[str, str]] = {
    "Transformer": {"encoder": "TransformerEncoder", "decoder": "TransformerDecoder"},
    "TransformerEncoder": {"norm": "LayerNorm"},
    "TransformerDecoder": {"norm": "LayerNorm"},
    "TransformerEncoderLayer": _ENCODER_LAYER,
    "TransformerDecoderLayer": {**_ENCODER_LAYER, "multihead_attn": "MultiheadAttention", "norm3": "LayerNorm",
                                "dropout3": "Dropout"},
    "MultiheadAttention": {"out_proj": "Linear"},
    "AdaptiveLogSoftmaxWithLoss": {"head": "Linear"},
}
# What a custom Function's `forward` calls on its `ctx` to save tensors that a backward frees.
SAVE_FOR_BACKWARD = "save_for_backward"
MODULE_BASES = frozenset(
    ("torch.nn.Module", "torch.nn.modules.module.Module", "pytorch_lightning.LightningModule",
     "lightning.LightningModule", "lightning.pytorch.LightningModule")
)
# Namespaces whose calls never build graph (optimizers, data, devices, tooling).
GRAPHLESS_NAMESPACES = ("torch.optim", "torch.utils", "torch.cuda", "torch.distributed", "torch.backends",
                        "torch.jit", "torch.onnx", "torch.hub")
# Receivers whose `.backward(loss)` backwards its argument (Accelerate, Fabric, DeepSpeed...).
BACKWARD_RUNNERS = frozenset(
    ("accelerator", "fabric", "trainer", "model_engine", "engine", "booster", "strategy", "deepspeed_engine")
)
# Framework protocols: a training loop of the framework calls a hook of the
# user's subclass once per step and backwards what it returns. By the
# canonical name of a base class (or its package and name suffix): the hooks.
STEP_HOOK_BASES: dict[str, frozenset[str]] = {
    **dict.fromkeys(
        ("pytorch_lightning.LightningModule", "pytorch_lightning.core.LightningModule",
         "pytorch_lightning.core.module.LightningModule", "lightning.LightningModule",
         "lightning.pytorch.LightningModule", "lightning.pytorch.core.LightningModule",
         "lightning.pytorch.core.module.LightningModule"),
        frozenset(("training_step",)),
    ),
}
# `transformers.Trainer`, `transformers.Seq2SeqTrainer`, `trl.DPOTrainer`, ...:
# `Trainer.training_step` backwards what `compute_loss` returns.
STEP_HOOK_PACKAGES: dict[str, tuple[str, frozenset[str]]] = {
    "transformers": ("Trainer", frozenset(("compute_loss",))),
    "trl": ("Trainer", frozenset(("compute_loss",))),
}
# Every hook's name: a file that defines one may hold a hazard without a backward call (the pre-check).
STEP_HOOK_NAMES = frozenset(
    name for hooks in (*STEP_HOOK_BASES.values(), *(p[1] for p in STEP_HOOK_PACKAGES.values())) for name in hooks
)
# `self.automatic_optimization = False`: the Lightning module backwards by itself.
MANUAL_OPTIMIZATION_FLAG = "self.automatic_optimization"
# Methods of an nn.Module that return the module itself.
MODULE_IDENTITY_METHODS = frozenset(
    ("to", "cuda", "cpu", "train", "eval", "float", "double", "half", "bfloat16", "type", "share_memory")
)
PARAMETER_METHODS = frozenset(("parameters", "named_parameters", "buffers", "named_buffers"))
# `nn.Module` methods that iterate the modules it holds.
SUBMODULE_METHODS = frozenset(("modules", "children"))
# Library calls that iterate over the elements of their arguments in turn
# (`itertools.chain(g.parameters(), e.parameters())` handed to an optimizer).
CHAINING_CALLS = frozenset(("itertools.chain",))
# Tensor methods that return (or act on) the tensor itself, not a new graph node.
TENSOR_SELF_METHODS = frozenset(
    ("retain_grad", "register_hook", "zero_", "fill_", "normal_", "uniform_", "copy_", "requires_grad")
)
# Tensor methods that convert or move data: on an input of unknown provenance
# they are data handling, not a model that may own parameters.
DATA_METHODS = frozenset(
    ("to", "float", "double", "half", "bfloat16", "long", "int", "bool", "cuda", "cpu", "type", "type_as",
     "contiguous", "clone", "masked_fill", "pin_memory")
)
# `optimizer.step()` / `zero_grad()`: a retained graph is not what the next backward relies on.
BARRIER_METHODS = frozenset(("step", "zero_grad"))
# Library model factories and wrappers (modern training code gets its model
# from these, not from a class of its own). Their results are modules with
# parameters: calling one records a tracked node (`outputs = model(**batch)`,
# `outputs.loss`), under `no_grad` an untracked one; `model.generate(...)`
# (no method of a library module is known to build graph) is untracked.
# Wrappers return the module they wrap (canonical names).
MODULE_WRAPPERS = frozenset(
    ("torch.compile", "torch.nn.DataParallel", "torch.nn.parallel.DataParallel",
     "torch.nn.parallel.DistributedDataParallel", "torch.nn.parallel.distributed.DistributedDataParallel",
     "torch.distributed.fsdp.FullyShardedDataParallel",
     "torch.distributed.fsdp.fully_sharded_data_parallel.FullyShardedDataParallel",
     "peft.prepare_model_for_kbit_training", "peft.prepare_model_for_int8_training")
)
# Factories: the module passed in (`get_peft_model(model, cfg)`), else a library module.
MODULE_FACTORIES = frozenset(
    ("peft.get_peft_model", "peft.mapping.get_peft_model", "hydra.utils.instantiate")
)
# `X.from_pretrained(...)` / `X.from_config(...)` builds a model unless `X` names
# one of the other things Hugging Face libraries load that way.
PRETRAINED_CONSTRUCTORS = frozenset(("from_pretrained", "from_config"))
NOT_MODULES_SUFFIXES = ("Tokenizer", "TokenizerFast", "Config", "Processor", "FeatureExtractor", "Scheduler",
                        "Pipeline", "Extractor", "Dataset")
# Fields of a model's output object (Hugging Face `ModelOutput`): tensors of their own.
MODEL_OUTPUT_FIELDS = frozenset(("loss", "logits"))
# `accelerator.prepare(model, optimizer, loader)`: returns its arguments (wrapped).
PREPARE_METHODS = frozenset(("prepare", "prepare_model"))


def builds_pretrained_module(raw: str, method: str) -> bool:
    """Does `raw` (a dotted call such as `AutoModel.from_pretrained`) load a model?"""
    if method not in PRETRAINED_CONSTRUCTORS:
        return False
    receiver = raw.rsplit(".", 1)[0].rsplit(".", 1)[-1] if "." in raw else ""
    return bool(receiver) and not receiver.endswith(NOT_MODULES_SUFFIXES)


# `torch.distributions`: a distribution built from tensors is a graph node
# whose parents are its parameters, and what is computed from it has history
# through them: `rsample()` (reparameterised), `log_prob`, `entropy`, `cdf`,
# and the lazily cached `logits`/`probs`/`mean` (read once, kept on the
# object: a distribution built once and used in every step reuses them).
# A *sample* is drawn without history (`sample()` runs under no_grad): it is
# data, even when the distribution is tracked.
DISTRIBUTIONS_NAMESPACE = "torch.distributions."
DISTRIBUTION_SAMPLERS = frozenset(("sample", "sample_n", "enumerate_support"))


def is_distribution_class(name: str) -> bool:
    """Does the canonical `name` (`torch.distributions.Categorical`,
    `torch.distributions.normal.Normal`) name a distribution class?"""
    return name.startswith(DISTRIBUTIONS_NAMESPACE) and name.rsplit(".", 1)[-1][:1].isupper()


# Recurrent layers by the shape of their state: one tensor, or an (h, c) tuple.
TENSOR_STATE_MODULES = frozenset({"RNN", "GRU", "RNNCell", "GRUCell"})
TUPLE_STATE_MODULES = frozenset({"LSTM", "LSTMCell"})

# Python builtins and container methods, as the interpreter models them.
BUILTIN_NAMES = frozenset(dir(__import__("builtins")))
PASS_THROUGH_BUILTINS = frozenset(
    ("list", "tuple", "sorted", "reversed", "iter", "next", "zip", "enumerate", "set", "filter", "map")
)
# What `isinstance(v, C)` tests for a tensor.
TENSOR_CLASSES = frozenset(("torch.Tensor", "torch.nn.Parameter", "torch.nn.parameter.Parameter"))
# Mapping classes whose call makes a new container, as `dict(...)` does.
MAPPING_CLASSES = frozenset(("collections.OrderedDict", "collections.defaultdict"))
LIST_ADDERS = frozenset(("append", "extend", "insert", "add", "update", "setdefault", "appendleft"))
SEQUENCE_ADDERS = frozenset(("append", "extend", "insert", "appendleft"))
LIST_GETTERS = frozenset(("pop", "get", "popleft", "values", "items", "copy"))
# Tensor methods that add their first argument into the receiver in place
# (`total.add_(loss)`: `total += loss` by another spelling).
IN_PLACE_ADDERS = frozenset(("add_", "sub_"))


# --- what a use of a value does with it (TL003: detection and fix safety) -------

# Calls that only show their arguments: printing, logging, loggers, progress bars.
REPORTING_CALLS = frozenset(
    (
        "print", "log", "info", "debug", "warning", "warn", "error", "critical", "exception",
        "add_scalar", "add_scalars", "log_metrics", "log_dict", "set_postfix", "set_description", "write",
        "pprint", "echo", "secho",
    )
)
# Functions of a number that return a number or its text.
NUMBER_CALLS = frozenset(("float", "int", "round", "abs", "str", "repr", "format", "bool"))
# Functions of a list of numbers that return a number.
REDUCING_CALLS = frozenset(("sum", "min", "max", "mean", "fmean", "median", "len"))
# Tensor methods that read a tensor's value out as Python data.
TENSOR_READS = frozenset(("item", "tolist"))
# Attributes whose use leaves the graph behind (read out, detached, moved to host).
UNGRAPHING_READS = frozenset(("item", "tolist", "numpy", "detach", "cpu"))

# --- what looks like a loss ------------------------------------------------------

LOSS_FUNCTIONS = frozenset(
    ("cross_entropy", "nll_loss", "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "binary_cross_entropy",
     "binary_cross_entropy_with_logits", "kl_div")
)
# Ops whose result TL003 takes for a loss or metric in an evaluation loop.
LOSS_OPS = LOSS_FUNCTIONS | {"sum", "mean"}
LOSS_WORDS = ("loss", "crit", "acc", "metric", "err", "cost", "nll", "score")


def callee_name(call: cst.Call) -> str:
    """The last component of what is called: `log.info(...)` -> "info"."""
    func = call.func
    if type(func) is cst_nodes.Name:
        return func.value
    if type(func) is cst_nodes.Attribute:
        return func.attr.value
    return ""


def only_reports(call: cst.Call) -> bool:
    """Does this call only show its arguments (print, logging, a logger, a
    progress bar)? TL003's detection (a total only reported after its loop)
    and its fix safety (`.item()` is then as good as the tensor) both ask."""
    return callee_name(call) in REPORTING_CALLS


def literal_bool(expr: Optional[cst.BaseExpression]) -> Optional[bool]:
    """`True`/`False`/an integer literal as a flag; None when not a literal."""
    if type(expr) is cst_nodes.Name and expr.value in ("True", "False"):
        return expr.value == "True"
    if type(expr) is cst_nodes.Integer:
        return expr.value not in ("0",)
    return None
