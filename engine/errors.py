"""Errors the engine raises, with the exact texts of the systems it imitates.

Every graph error carries the structured facts a confirmation needs (which
node, where it was created, which backward released it, which call failed),
so callers never have to parse a message.
"""

from __future__ import annotations

from dataclasses import dataclass

from .source import user_stack


@dataclass(frozen=True)
class Raised:
    """What an engine error said, kept without its traceback (which would keep
    the program's tensors alive and change what strict semantics prunes)."""

    kind: str
    message: str
    node_id: int | None = None
    node_line: int | None = None
    consumed_line: int | None = None
    line: int | None = None
    modified_line: int | None = None
    node_lines: tuple[int, ...] = ()  # the node's creation stack in the user's file, innermost first
    stack: tuple[int, ...] = ()  # the failing call's stack in the user's file, outermost first
    reused_lines: tuple[int, ...] = ()  # lines of nodes an earlier backward freed that this walk reached


RAISED: list[Raised] = []  # graph and unsupported errors in raise order, caught or not

SECOND_BACKWARD = (
    "Trying to backward through the graph a second time (or directly access saved tensors "
    "after they have already been freed). Saved intermediate values of the graph are freed "
    "when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to "
    "backward through the graph a second time or if you need to access saved tensors after "
    "calling backward."
)
TAPE_CONSUMED = (
    "Cannot run backward: graph tape has already been consumed at NodeId({node_id}). "
    "Burn does not support retain_graph. Combine losses before backward or recompute the "
    "forward pass. Use detach() only to intentionally sever gradients through the previous "
    "computation."
)
INPLACE = (
    "one of the variables needed for gradient computation has been modified by an inplace "
    "operation: [{tensor}]{origin} is at version {version}; expected version {expected} "
    "instead. Hint: enable anomaly detection to find the operation that failed to compute "
    "its gradient, with torch.autograd.set_detect_anomaly(True, check_nan=False)."
)
NON_SCALAR = "grad can be implicitly created only for scalar outputs"
NO_GRAD_FN = "element {index} of tensors does not require grad and does not have a grad_fn"
LEAF_INPLACE = "a leaf Variable that requires grad is being used in an in-place operation."
VIEW_LEAF_INPLACE = "a view of a leaf Variable that requires grad is being used in an in-place operation."
NUMPY_REQUIRES_GRAD = (
    "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead."
)
INT_REQUIRES_GRAD = "Only Tensors of floating point and complex dtype can require gradients"
REQUIRES_GRAD_NONLEAF = (
    "you can only change requires_grad flags of leaf variables. If you want to use a computed "
    "variable in a subgraph that doesn't require differentiation use var_no_grad = var.detach()."
)
HOOK_NO_GRAD = "cannot register a hook on a tensor that doesn't require gradient"
HOOK_NOT_TENSOR = "expected Variable, but hook returned '{type}'"
HOOK_SIZE = "hook '{name}' has changed the size of value"
HOOK_NONE = "can't replace a None gradient with a non-None value"
GRAD_INPUT_NO_GRAD = "One of the differentiated Tensors does not require grad"
GRAD_INPUT_UNUSED = (
    "The differentiated Tensor at index {index} appears to not have been used in the graph. "
    "Set allow_unused=True if this is the desired behavior."
)
NONLEAF_GRAD_WARNING = (
    "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad "
    "attribute won't be populated during autograd.backward(). If you indeed want the .grad "
    "field to be populated for a non-leaf Tensor, use .retain_grad() on the non-leaf Tensor. "
    "If you access the non-leaf Tensor by mistake, make sure you access the leaf Tensor "
    "instead. See github.com/pytorch/pytorch/pull/30531 for more information. (Triggered "
    "internally at /__w/pytorch/pytorch/build/aten/src/ATen/core/TensorBody.h:493.)"
)


class GraphError(Exception):
    """Mixin data of a graph-reuse error: which node, and the lines around it."""

    kind = "other"

    def __init__(
        self,
        message: str,
        *,
        node_id: int | None = None,
        node_line: int | None = None,
        consumed_line: int | None = None,
        line: int | None = None,
        modified_line: int | None = None,
        node_lines: tuple[int, ...] = (),
        stack: tuple[int, ...] | None = None,
        reused_lines: tuple[int, ...] = (),
    ) -> None:
        super().__init__(message)
        self.stack = user_stack() if stack is None else stack  # where it is raised, unless told
        self.node_lines = node_lines
        self.modified_line = modified_line
        self.node_id = node_id
        self.node_line = node_line
        self.consumed_line = consumed_line
        self.line = line
        self.reused_lines = reused_lines
        RAISED.append(Raised(self.kind, message, node_id, node_line, consumed_line, line,
                             modified_line, node_lines, self.stack, reused_lines))


class SecondBackwardError(GraphError, RuntimeError):
    """PyTorch's error for walking a node whose saved tensors were freed."""

    kind = "second-backward"


class InplaceModifiedError(GraphError, RuntimeError):
    """PyTorch's error for a saved tensor modified in place after it was saved."""

    kind = "inplace"


class TapeConsumedError(GraphError):
    """burn's panic for a consumed tape step; not a RuntimeError, a panic is not catchable there."""

    kind = "tape-consumed"


class NotSupportedByEngine(Exception):
    """An API the facade does not model: the run proves nothing either way."""

    def __init__(self, what: str) -> None:
        super().__init__(f"not supported by the engine: {what}")
        RAISED.append(Raised("unsupported", str(self)))
        self.what = what


def only_defaults(api: str, **given: object) -> None:
    """Arguments the engine does not model are refused, never ignored: any value but
    the default (None or False for every argument passed here) is unsupported, so a
    confirmation never runs a different program than PyTorch would."""
    for name, value in given.items():
        if value is not None and value is not False:
            raise NotSupportedByEngine(f"{api}({name}={value!r})")
