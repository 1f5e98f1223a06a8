"""`torch.func`: `grad`, `grad_and_value`, `vjp`, `jvp`, `jacrev`, `jacfwd`,
`hessian`, `vmap`, `functional_call`.

PyTorch runs these as function transforms; here they are built from the tape the
rest of the engine uses, so the numbers are PyTorch's and the graphs compose:
- `grad(f)(x)` differentiates `f` at a fresh entry point for each argument (a new
  leaf, or an alias of a tracked input) with `create_graph=True`, so the gradient
  stays differentiable in whatever outer tensors `f` used (MAML-style outer
  losses), and is detached when it depends on nothing outside.
- `vjp(f, *primals)` returns `f`'s output and a function pulling cotangents back to
  the primals (one backward per call, the graph kept for the next).
- `jacrev`/`jacfwd` build the Jacobian one output element at a time by pulling
  back a basis vector; `jacfwd` gives the same numbers through reverse mode.
  `hessian(f)` is `jacfwd(jacrev(f))`: the inner Jacobian is differentiable in the
  outer entry points, as `grad`'s result is.
- `jvp(f, primals, tangents)` is the double-vjp: pulling back a cotangent `u` that
  requires grad gives `J^T u` (recorded), whose gradient in `u` along the tangents
  is `J t`.
- `vmap(f)` runs `f` once per index of the mapped dims and stacks the results: the
  same values as PyTorch's batched kernels (per-sample gradients included), through
  a different graph.
- `functional_call(module, tensors, args)` runs the module with its parameters and
  buffers swapped for the given tensors, restoring them after.
Under strict semantics these transforms are refused: burn has no function transforms, and the
tape's consumption rule has no meaning inside one.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .. import ops, tape
from ..errors import NotSupportedByEngine
from ..methods import select
from ..tape import STATE, Tensor

# ----------------------------------------------------------------- pytrees


def _flatten(tree: Any) -> tuple[list[Any], Callable[[list[Any]], Any]]:
    """The leaves of nested tuples/lists/dicts, and a function rebuilding the tree from new leaves."""
    if isinstance(tree, (tuple, list)):
        parts = [_flatten(x) for x in tree]
        return _join(parts, lambda xs: type(tree)(xs) if not hasattr(tree, "_fields") else type(tree)(*xs))
    if isinstance(tree, dict):
        keys = list(tree)
        parts = [_flatten(tree[k]) for k in keys]
        return _join(parts, lambda xs: type(tree)(zip(keys, xs)))
    return [tree], lambda leaves: leaves[0]


def _join(parts: list, build: Callable[[list[Any]], Any]) -> tuple[list[Any], Callable[[list[Any]], Any]]:
    leaves = [leaf for p in parts for leaf in p[0]]
    sizes = [len(p[0]) for p in parts]

    def rebuild(new: list[Any]) -> Any:
        out, at = [], 0
        for (_, sub), n in zip(parts, sizes):
            out.append(sub(new[at:at + n]))
            at += n
        return build(out)
    return leaves, rebuild


# -------------------------------------------------------------------- grad


def _entry(t: Any) -> Any:
    """Where `grad` differentiates: an alias of a tracked tensor (so the outer graph
    continues through it), else a new leaf sharing the data."""
    if not isinstance(t, Tensor):
        raise TypeError(f"grad(f)(*args): Expected args to be Tensors (or nested), got {type(t).__name__}")
    if t.requires_grad:
        return ops.reshape(t, t.arr.shape, "AliasBackward0")
    return Tensor(t.arr, requires_grad=True)


def _reaches_outside(t: Tensor, fresh: set[int]) -> bool:
    """Does `t`'s graph reach a leaf that requires grad other than grad's own entry points?"""
    if t._node is None:
        return t._rg and id(t) not in fresh
    for node in tape._reachable([t._node]):
        if any(isinstance(e, Tensor) and id(e) not in fresh for e in node.inputs):
            return True
    return False


def _outer(t: Any, fresh: set[int]) -> Any:
    if isinstance(t, Tensor) and t.requires_grad and not _reaches_outside(t, fresh):
        return t.detach()
    return t


def _scalar(out: Any) -> Tensor:
    if not isinstance(out, Tensor):
        raise RuntimeError(f"grad_and_value(f)(*args): Expected f(*args) to return a Tensor, got {type(out)}")
    if out.arr.ndim != 0:
        raise RuntimeError(f"grad_and_value(f)(*args): Expected f(*args) to return a scalar Tensor, got tensor "
                           f"with {out.arr.ndim} dims. Maybe you wanted to use the vjp or jacrev APIs instead?")
    return out


def _refuse_strict(name: str) -> None:
    if STATE.semantics == "strict":
        raise NotSupportedByEngine(f"torch.func.{name} under strict semantics")


class _Entries:
    """The entry points of the differentiated arguments (pytrees flattened) and how to
    rebuild per-argument structures from one value per entry."""

    def __init__(self, args: Sequence[Any], nums: tuple[int, ...]) -> None:
        self.call = list(args)
        self.tensors: list[Tensor] = []
        self.rebuilds: list[tuple[Callable[[list[Any]], Any], int]] = []
        for n in nums:
            leaves, rebuild = _flatten(args[n])
            mine = [_entry(t) for t in leaves]
            self.call[n] = rebuild(mine)
            self.tensors.extend(mine)
            self.rebuilds.append((rebuild, len(mine)))
        self.fresh = {id(t) for t in self.tensors if t._node is None}

    def per_arg(self, values: list[Any]) -> list[Any]:
        out, at = [], 0
        for rebuild, n in self.rebuilds:
            out.append(rebuild(values[at:at + n]))
            at += n
        return out

    def outer(self, tree: Any) -> Any:
        """`tree`'s tensors, detached unless they depend on tensors outside the transform."""
        leaves, rebuild = _flatten(tree)
        return rebuild([_outer(t, self.fresh) for t in leaves])


def _pull(outs: Sequence[Tensor], cotangents: Sequence[Tensor], inputs: Sequence[Tensor],
          create_graph: bool) -> list[Tensor]:
    """Gradients of sum(out * cotangent) in each input (zeros where unused); the graph stays."""
    tracked = [(o, c) for o, c in zip(outs, cotangents) if o.requires_grad]
    grads: Sequence[Tensor | None] = [None] * len(inputs)
    if tracked:
        grads = tape.run_backward([o for o, _ in tracked], [c for _, c in tracked], retain_graph=True,
                                  create_graph=create_graph, inputs=inputs, accumulate=False)
    return [g if g is not None else Tensor(np.zeros_like(t.arr)) for g, t in zip(grads, inputs)]


def _run(func: Callable[..., Any], call: Sequence[Any], kwargs: dict, has_aux: bool) -> tuple[Any, Any]:
    """`func` with grad mode on (the transform differentiates whatever the caller's mode)."""
    prev, STATE.grad_enabled = STATE.grad_enabled, True
    try:
        result = func(*call, **kwargs)
    finally:
        STATE.grad_enabled = prev
    if not has_aux:
        return result, None
    if not (isinstance(result, tuple) and len(result) == 2):
        raise RuntimeError("has_aux=True: expected the function to return a (output, aux) tuple")
    return result


def _tensors(out: Any, api: str) -> tuple[list[Tensor], Callable[[list[Any]], Any]]:
    leaves, rebuild = _flatten(out)
    for t in leaves:
        if not isinstance(t, Tensor):
            raise RuntimeError(f"{api}(f, ...): expected f(*primals) to return only tensors, got "
                               f"unsupported type {type(t)}")
    return leaves, rebuild


def grad_and_value(func: Callable[..., Any], argnums: int | tuple[int, ...] = 0,
                   has_aux: bool = False) -> Callable[..., Any]:
    @functools.wraps(func)
    def transformed(*args: Any, **kwargs: Any) -> Any:
        _refuse_strict("grad")
        entries = _Entries(args, _nums(argnums))
        out, aux = _run(func, entries.call, kwargs, has_aux)
        out = _scalar(out)
        filled = _pull([out], [Tensor(np.ones_like(out.arr))], entries.tensors, STATE.grad_enabled)
        per_arg = entries.per_arg(entries.outer(filled))
        gradient = per_arg[0] if isinstance(argnums, int) else tuple(per_arg)
        value = _outer(out, entries.fresh)
        if has_aux:
            return gradient, (value, entries.outer(aux))
        return gradient, value
    return transformed


def _nums(argnums: int | tuple[int, ...]) -> tuple[int, ...]:
    return (argnums,) if isinstance(argnums, int) else tuple(argnums)


def grad(func: Callable[..., Any], argnums: int | tuple[int, ...] = 0, has_aux: bool = False) -> Callable[..., Any]:
    both = grad_and_value(func, argnums, has_aux)

    @functools.wraps(func)
    def transformed(*args: Any, **kwargs: Any) -> Any:
        gradient, value = both(*args, **kwargs)
        return (gradient, value[1]) if has_aux else gradient
    return transformed


# --------------------------------------------------------- vjp, jvp, jacobians


def vjp(func: Callable[..., Any], *primals: Any, has_aux: bool = False) -> tuple:
    _refuse_strict("vjp")
    entries = _Entries(primals, tuple(range(len(primals))))
    result, aux = _run(func, entries.call, {}, has_aux)
    outs, _ = _tensors(result, "vjp")
    create_graph = STATE.grad_enabled

    def vjp_fn(cotangents: Any) -> tuple:
        given, _ = _flatten(cotangents)
        if len(given) != len(outs) or any(tuple(c.arr.shape) != tuple(o.arr.shape) for c, o in zip(given, outs)):
            raise RuntimeError("Expected pytree structure of cotangents to be the same as pytree structure of "
                               "outputs to the function")
        return tuple(entries.per_arg(entries.outer(_pull(outs, given, entries.tensors, create_graph))))

    value = entries.outer(result)
    return (value, vjp_fn, entries.outer(aux)) if has_aux else (value, vjp_fn)


def jvp(func: Callable[..., Any], primals: Any, tangents: Any, *, strict: bool = False,
        has_aux: bool = False) -> tuple:
    _refuse_strict("jvp")
    if not isinstance(primals, tuple) or not isinstance(tangents, tuple):
        raise RuntimeError("jvp(f, primals, tangents): Expected primals and tangents to be tuples")
    entries = _Entries(primals, tuple(range(len(primals))))
    given, _ = _flatten(tangents)
    if len(given) != len(entries.tensors):
        raise RuntimeError("jvp(f, primals, tangents): Expected primals and tangents to have the same "
                           "python structure")
    result, aux = _run(func, entries.call, {}, has_aux)
    outs, rebuild = _tensors(result, "jvp")
    create_graph = STATE.grad_enabled
    probes = [Tensor(np.zeros_like(o.arr), requires_grad=True) for o in outs]  # the cotangent u
    with_probe = _pull(outs, probes, entries.tensors, True)  # J^T u, recorded
    tangent_out = _pull(with_probe, given, probes, create_graph)  # d/du <J^T u, t> = J t
    value = entries.outer(result)
    pushed = rebuild(entries.outer(tangent_out))
    return (value, pushed, entries.outer(aux)) if has_aux else (value, pushed)


def _jacobian(func: Callable[..., Any], argnums: int | tuple[int, ...], has_aux: bool,
              api: str) -> Callable[..., Any]:
    @functools.wraps(func)
    def transformed(*args: Any, **kwargs: Any) -> Any:
        _refuse_strict(api)
        entries = _Entries(args, _nums(argnums))
        result, aux = _run(func, entries.call, kwargs, has_aux)
        outs, rebuild = _tensors(result, api)
        create_graph = STATE.grad_enabled
        per_out = []
        for o in outs:
            rows = []
            for k in range(o.arr.size):  # PyTorch pulls back all outputs at once: zeros for the others
                cotangents = [Tensor(np.zeros_like(other.arr)) for other in outs]
                cotangents[next(i for i, other in enumerate(outs) if other is o)].arr.flat[k] = 1
                rows.append(_pull(outs, cotangents, entries.tensors, create_graph))
            blocks = [ops.reshape(ops.stack([row[i] for row in rows], 0) if rows else
                                  Tensor(np.zeros((0, *t.arr.shape), t.arr.dtype)), o.arr.shape + t.arr.shape)
                      for i, t in enumerate(entries.tensors)]
            per_arg = entries.per_arg(entries.outer(blocks))
            per_out.append(per_arg[0] if isinstance(argnums, int) else tuple(per_arg))
        jac = rebuild(per_out)
        return (jac, entries.outer(aux)) if has_aux else jac
    return transformed


def jacrev(func: Callable[..., Any], argnums: int | tuple[int, ...] = 0, *, has_aux: bool = False,
           chunk_size: int | None = None, _preallocate_and_copy: bool = False) -> Callable[..., Any]:
    return _jacobian(func, argnums, has_aux, "jacrev")


def jacfwd(func: Callable[..., Any], argnums: int | tuple[int, ...] = 0, has_aux: bool = False, *,
           randomness: str = "error") -> Callable[..., Any]:
    return _jacobian(func, argnums, has_aux, "jacfwd")


def hessian(func: Callable[..., Any], argnums: int | tuple[int, ...] = 0) -> Callable[..., Any]:
    return jacfwd(jacrev(func, argnums), argnums)


# -------------------------------------------------------------------- vmap


def _per_arg(dims: Any, n: int) -> list[Any]:
    if isinstance(dims, (int, type(None))):
        return [dims] * n
    dims = list(dims)
    if len(dims) != n:
        raise ValueError(f"vmap(f, in_dims={tuple(dims)}, ...)(<inputs>): in_dims is not compatible with the "
                         f"structure of `inputs`. in_dims has structure of length {len(dims)} but inputs has "
                         f"length {n}.")
    return dims


def _mapped(arg: Any, dim: Any) -> list[tuple[Tensor, int]]:
    """(tensor, dim) for each leaf of `arg` that `dim` maps (an int, or a tree like `arg`)."""
    if dim is None:
        return []
    leaves, _ = _flatten(arg)
    dims = [dim] * len(leaves) if isinstance(dim, int) else _flatten(dim)[0]
    return [(t, d % t.arr.ndim) for t, d in zip(leaves, dims) if d is not None]


def _slice(arg: Any, dim: Any, i: int) -> Any:
    if dim is None:
        return arg
    leaves, rebuild = _flatten(arg)
    dims = [dim] * len(leaves) if isinstance(dim, int) else _flatten(dim)[0]
    return rebuild([t if d is None else select(t, d, i) for t, d in zip(leaves, dims)])


def vmap(func: Callable[..., Any], in_dims: Any = 0, out_dims: Any = 0, randomness: str = "error", *,
         chunk_size: int | None = None) -> Callable[..., Any]:
    @functools.wraps(func)
    def transformed(*args: Any, **kwargs: Any) -> Any:
        dims = _per_arg(in_dims, len(args))
        mapped = [m for a, d in zip(args, dims) for m in _mapped(a, d)]
        if not mapped:
            raise ValueError("vmap(f, in_dims=..., ...)(<inputs>): at least one input must be mapped "
                             "(in_dims all None)")
        sizes = {t.arr.shape[d] for t, d in mapped}
        if len(sizes) != 1:
            raise ValueError(f"vmap: Expected all tensors to have the same size in the mapped dimension, "
                             f"got sizes {sorted(sizes)} for the mapped dimension")
        results = [func(*[_slice(a, d, i) for a, d in zip(args, dims)], **kwargs) for i in range(sizes.pop())]
        leaves, rebuild = _flatten(results[0])
        outs = _per_arg(out_dims, len(leaves)) if not isinstance(out_dims, int) else [out_dims] * len(leaves)
        columns = zip(*[_flatten(r)[0] for r in results])
        return rebuild([ops.stack([_as_tensor(x) for x in col], d) for col, d in zip(columns, outs)])
    return transformed


def _as_tensor(x: Any) -> Tensor:
    if isinstance(x, Tensor):
        return x
    raise ValueError(f"vmap: `f` must return only Tensors, got type {type(x)}")


# --------------------------------------------------------- functional_call


def _owner(module: Any, dotted: str) -> tuple[Any, str]:
    *path, name = dotted.split(".")
    for part in path:
        module = getattr(module, part)
    return module, name


def functional_call(module: Any, parameter_and_buffer_dicts: Any, args: Any = None, kwargs: Any = None, *,
                    tie_weights: bool = True, strict: bool = False) -> Any:
    dicts = parameter_and_buffer_dicts if isinstance(parameter_and_buffer_dicts, (tuple, list)) \
        else (parameter_and_buffer_dicts,)
    tensors = {k: v for d in dicts for k, v in d.items()}
    swapped: list[tuple[dict, str, Any]] = []
    try:
        for dotted, value in tensors.items():
            owner, name = _owner(module, dotted)
            store = owner._parameters if name in owner._parameters else owner._buffers \
                if name in owner._buffers else None
            if store is None:
                raise NotSupportedByEngine(f"torch.func.functional_call with a name that is not a parameter "
                                           f"or buffer ({dotted})")
            swapped.append((store, name, store[name]))
            store[name] = value
        call_args = args if isinstance(args, tuple) else (() if args is None else (args,))
        return module(*call_args, **(kwargs or {}))
    finally:
        for store, name, old in reversed(swapped):
            store[name] = old


def __getattr__(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(name)
    raise NotSupportedByEngine(f"torch.func.{name}")
