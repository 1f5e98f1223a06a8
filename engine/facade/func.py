"""`torch.func`: `grad`, `grad_and_value`, `vmap`, `functional_call`.

PyTorch runs these as function transforms; here they are built from the tape the
rest of the engine uses, so the numbers are PyTorch's and the graphs compose:
- `grad(f)(x)` differentiates `f` at a fresh entry point for each argument (a new
  leaf, or an alias of a tracked input) with `create_graph=True`, so the gradient
  stays differentiable in whatever outer tensors `f` used (MAML-style outer
  losses), and is detached when it depends on nothing outside.
- `vmap(f)` runs `f` once per index of the mapped dims and stacks the results: the
  same values as PyTorch's batched kernels (per-sample gradients included), through
  a different graph.
- `functional_call(module, tensors, args)` runs the module with its parameters and
  buffers swapped for the given tensors, restoring them after.
Under strict semantics `grad` is refused: burn has no function transforms, and the
tape's consumption rule has no meaning inside one.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any, Callable

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


def grad_and_value(func: Callable[..., Any], argnums: int | tuple[int, ...] = 0,
                   has_aux: bool = False) -> Callable[..., Any]:
    @functools.wraps(func)
    def transformed(*args: Any, **kwargs: Any) -> Any:
        if STATE.semantics == "strict":
            raise NotSupportedByEngine("torch.func.grad under strict semantics")
        nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
        call = list(args)
        entries: list[Tensor] = []
        rebuilds = []
        for n in nums:
            leaves, rebuild = _flatten(args[n])
            mine = [_entry(t) for t in leaves]
            call[n] = rebuild(mine)
            entries.extend(mine)
            rebuilds.append((rebuild, len(mine)))
        prev, STATE.grad_enabled = STATE.grad_enabled, True
        try:
            result = func(*call, **kwargs)
            out, aux = result if has_aux else (result, None)
            out = _scalar(out)
            grads: Sequence[Tensor | None] = [None] * len(entries)
            if out.requires_grad:
                grads = tape.run_backward([out], [None], retain_graph=True, create_graph=prev, inputs=entries,
                                          accumulate=False)
        finally:
            STATE.grad_enabled = prev
        fresh = {id(t) for t in entries if t._node is None}
        filled = [_outer(g, fresh) if g is not None else Tensor(np.zeros_like(t.arr))
                  for g, t in zip(grads, entries)]
        per_arg, at = [], 0
        for rebuild, n in rebuilds:
            per_arg.append(rebuild(filled[at:at + n]))
            at += n
        gradient = per_arg[0] if isinstance(argnums, int) else tuple(per_arg)
        value = _outer(out, fresh)
        if has_aux:
            aux_leaves, rebuild_aux = _flatten(aux)
            return gradient, (value, rebuild_aux([_outer(a, fresh) for a in aux_leaves]))
        return gradient, value
    return transformed


def grad(func: Callable[..., Any], argnums: int | tuple[int, ...] = 0, has_aux: bool = False) -> Callable[..., Any]:
    both = grad_and_value(func, argnums, has_aux)

    @functools.wraps(func)
    def transformed(*args: Any, **kwargs: Any) -> Any:
        gradient, value = both(*args, **kwargs)
        return (gradient, value[1]) if has_aux else gradient
    return transformed


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
