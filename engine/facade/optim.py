"""`torch.optim`: SGD, Adam, AdamW, RMSprop, Adagrad and L-BFGS, updating parameters in place.

Each update bumps the parameter's version counter, exactly what turns a graph
kept across `optimizer.step()` into PyTorch's in-place error.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..errors import NotSupportedByEngine, only_defaults
from ..tape import Tensor


class Optimizer:
    def __init__(self, params: Any, defaults: dict[str, Any]) -> None:
        self.defaults = defaults
        self.state: dict[int, dict[str, Any]] = {}
        groups = list(params)
        if not groups:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        self.param_groups: list[dict[str, Any]] = []
        for g in groups:
            self.add_param_group(g)

    def add_param_group(self, group: dict[str, Any]) -> None:
        params = group["params"]
        group = {**self.defaults, **group,
                 "params": [params] if isinstance(params, Tensor) else list(params)}
        self.param_groups.append(group)

    def zero_grad(self, set_to_none: bool = True) -> None:
        for group in self.param_groups:
            for p in group["params"]:
                if p._grad is None:
                    continue
                if set_to_none:
                    p._grad = None
                else:
                    p._grad.arr[...] = 0
                    p._grad._counter[0] += 1

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        loss = closure() if closure is not None else None
        for group in self.param_groups:
            for p in group["params"]:
                if p._grad is None:
                    continue
                g = p._grad.arr.astype(p.arr.dtype)
                if group.get("maximize"):
                    g = -g
                self._update(p, g, group, self.state.setdefault(id(p), {}))
                p._bump()
        return loss

    def _update(self, p: Tensor, g: np.ndarray, group: dict, state: dict) -> None:
        raise NotImplementedError

    def state_dict(self) -> dict:
        return {"state": self.state, "param_groups": [{k: v for k, v in g.items() if k != "params"}
                                                      for g in self.param_groups]}

    def load_state_dict(self, state: dict) -> None:
        for g, saved in zip(self.param_groups, state["param_groups"]):
            g.update(saved)


class SGD(Optimizer):
    def __init__(self, params: Any, lr: float = 1e-3, momentum: float = 0.0, dampening: float = 0.0,
                 weight_decay: float = 0.0, nesterov: bool = False, *, maximize: bool = False,
                 foreach: Any = None, differentiable: bool = False, fused: Any = None) -> None:
        only_defaults("torch.optim.SGD", differentiable=differentiable)
        super().__init__(params, dict(lr=lr, momentum=momentum, dampening=dampening,
                                      weight_decay=weight_decay, nesterov=nesterov, maximize=maximize))

    def _update(self, p: Tensor, g: np.ndarray, group: dict, state: dict) -> None:
        if group["weight_decay"]:
            g = g + group["weight_decay"] * p.arr
        if group["momentum"]:
            buf = state.get("momentum_buffer")
            buf = g.copy() if buf is None else buf * group["momentum"] + (1 - group["dampening"]) * g
            state["momentum_buffer"] = buf
            g = g + group["momentum"] * buf if group["nesterov"] else buf
        p.arr -= np.asarray(group["lr"] * g, dtype=p.arr.dtype)


class Adam(Optimizer):
    def __init__(self, params: Any, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0.0, amsgrad: bool = False, *,
                 foreach: Any = None, maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False, fused: Any = None,
                 decoupled_weight_decay: bool = False) -> None:
        only_defaults(f"torch.optim.{type(self).__name__}", differentiable=differentiable)
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                                      amsgrad=amsgrad, maximize=maximize,
                                      decoupled_weight_decay=decoupled_weight_decay))

    def _update(self, p: Tensor, g: np.ndarray, group: dict, state: dict) -> None:
        lr, (b1, b2), eps, wd = group["lr"], group["betas"], group["eps"], group["weight_decay"]
        if wd and group["decoupled_weight_decay"]:
            p.arr *= np.asarray(1 - lr * wd, dtype=p.arr.dtype)
        elif wd:
            g = g + wd * p.arr
        if not state:
            state.update(step=0, exp_avg=np.zeros_like(p.arr), exp_avg_sq=np.zeros_like(p.arr))
        state["step"] += 1
        m = state["exp_avg"] = b1 * state["exp_avg"] + (1 - b1) * g
        v = state["exp_avg_sq"] = b2 * state["exp_avg_sq"] + (1 - b2) * g * g
        if group["amsgrad"]:
            v = state["max_exp_avg_sq"] = np.maximum(state.get("max_exp_avg_sq", v), v)
        t = state["step"]
        denom = np.sqrt(v / (1 - b2 ** t)) + eps
        p.arr -= np.asarray(lr / (1 - b1 ** t) * m / denom, dtype=p.arr.dtype)


class AdamW(Adam):
    """Adam with decoupled weight decay (default 1e-2, as in PyTorch)."""

    def __init__(self, params: Any, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 1e-2, amsgrad: bool = False, *,
                 maximize: bool = False, foreach: Any = None, capturable: bool = False,
                 differentiable: bool = False, fused: Any = None) -> None:
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, maximize=maximize,
                         differentiable=differentiable, decoupled_weight_decay=True)


class RMSprop(Optimizer):
    def __init__(self, params: Any, lr: float = 1e-2, alpha: float = 0.99, eps: float = 1e-8,
                 weight_decay: float = 0.0, momentum: float = 0.0, centered: bool = False,
                 capturable: bool = False, foreach: Any = None, maximize: bool = False,
                 differentiable: bool = False) -> None:
        only_defaults("torch.optim.RMSprop", differentiable=differentiable)
        super().__init__(params, dict(lr=lr, alpha=alpha, eps=eps, weight_decay=weight_decay,
                                      momentum=momentum, centered=centered, maximize=maximize))

    def _update(self, p: Tensor, g: np.ndarray, group: dict, state: dict) -> None:
        alpha, eps = group["alpha"], group["eps"]
        if group["weight_decay"]:
            g = g + group["weight_decay"] * p.arr
        if not state:
            state.update(step=0, square_avg=np.zeros_like(p.arr), grad_avg=np.zeros_like(p.arr),
                         momentum_buffer=np.zeros_like(p.arr))
        state["step"] += 1
        sq = state["square_avg"] = alpha * state["square_avg"] + (1 - alpha) * g * g
        if group["centered"]:
            ga = state["grad_avg"] = alpha * state["grad_avg"] + (1 - alpha) * g
            avg = np.sqrt(sq - ga * ga) + eps
        else:
            avg = np.sqrt(sq) + eps
        if group["momentum"]:
            buf = state["momentum_buffer"] = group["momentum"] * state["momentum_buffer"] + g / avg
            p.arr -= np.asarray(group["lr"] * buf, dtype=p.arr.dtype)
        else:
            p.arr -= np.asarray(group["lr"] * g / avg, dtype=p.arr.dtype)


class Adagrad(Optimizer):
    def __init__(self, params: Any, lr: float = 1e-2, lr_decay: float = 0.0, weight_decay: float = 0.0,
                 initial_accumulator_value: float = 0.0, eps: float = 1e-10, foreach: Any = None, *,
                 maximize: bool = False, differentiable: bool = False, fused: Any = None) -> None:
        only_defaults("torch.optim.Adagrad", differentiable=differentiable)
        super().__init__(params, dict(lr=lr, lr_decay=lr_decay, weight_decay=weight_decay,
                                      initial_accumulator_value=initial_accumulator_value, eps=eps,
                                      maximize=maximize))
        for group in self.param_groups:  # PyTorch fills the state at construction
            for p in group["params"]:
                self.state[id(p)] = {"step": 0, "sum": np.full_like(p.arr, group["initial_accumulator_value"])}

    def _update(self, p: Tensor, g: np.ndarray, group: dict, state: dict) -> None:
        if group["weight_decay"]:
            g = g + group["weight_decay"] * p.arr
        state["step"] += 1
        clr = group["lr"] / (1 + (state["step"] - 1) * group["lr_decay"])
        state["sum"] = state["sum"] + g * g
        p.arr -= np.asarray(clr * g / (np.sqrt(state["sum"]) + group["eps"]), dtype=p.arr.dtype)


class LBFGS(Optimizer):
    """PyTorch's L-BFGS (one parameter group, no line search): each `step(closure)` runs
    up to `max_iter` iterations of the two-loop recursion over the flattened
    gradient, re-evaluating the closure (with grad enabled) after each update."""

    def __init__(self, params: Any, lr: float = 1, max_iter: int = 20, max_eval: int | None = None,
                 tolerance_grad: float = 1e-7, tolerance_change: float = 1e-9, history_size: int = 100,
                 line_search_fn: str | None = None) -> None:
        only_defaults("torch.optim.LBFGS", line_search_fn=line_search_fn)
        super().__init__(params, dict(lr=lr, max_iter=max_iter, max_eval=max_eval or max_iter * 5 // 4,
                                      tolerance_grad=tolerance_grad, tolerance_change=tolerance_change,
                                      history_size=history_size))
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")
        self._params: list[Tensor] = self.param_groups[0]["params"]

    def _flat_grad(self) -> np.ndarray:
        return np.concatenate([(p._grad.arr if p._grad is not None else np.zeros_like(p.arr)).ravel()
                               for p in self._params])

    def _add(self, t: float, d: np.ndarray) -> None:
        offset = 0
        for p in self._params:
            n = p.arr.size
            p.arr += np.asarray(t * d[offset:offset + n].reshape(p.arr.shape), dtype=p.arr.dtype)
            p._bump()
            offset += n

    def _evaluate(self, closure: Callable[[], Any]) -> Any:
        from .grad_mode import enable_grad

        with enable_grad():
            return closure()

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        if closure is None:
            raise RuntimeError("LBFGS requires a closure")
        group = self.param_groups[0]
        lr, max_iter, max_eval = group["lr"], group["max_iter"], group["max_eval"]
        tol_grad, tol_change, history = group["tolerance_grad"], group["tolerance_change"], group["history_size"]
        state = self.state.setdefault(id(self._params[0]), {"func_evals": 0, "n_iter": 0})
        orig_loss = self._evaluate(closure)
        loss, evals = _value(orig_loss), 1
        state["func_evals"] += 1
        flat_grad = self._flat_grad()
        if np.abs(flat_grad).max() <= tol_grad:
            return orig_loss
        d: np.ndarray = state.get("d", flat_grad)
        t: float = state.get("t", lr)
        old_dirs, old_stps, ro = state.get("old_dirs", []), state.get("old_stps", []), state.get("ro", [])
        h_diag, prev_grad = state.get("H_diag", 1.0), state.get("prev_flat_grad")
        n_iter = 0
        while n_iter < max_iter:
            n_iter += 1
            state["n_iter"] += 1
            if state["n_iter"] == 1:
                d, old_dirs, old_stps, ro, h_diag = -flat_grad, [], [], [], 1.0
            else:
                y, s = flat_grad - prev_grad, d * t
                ys = float(y @ s)
                if ys > 1e-10:
                    if len(old_dirs) == history:
                        old_dirs.pop(0), old_stps.pop(0), ro.pop(0)
                    old_dirs.append(y), old_stps.append(s), ro.append(1.0 / ys)
                    h_diag = ys / float(y @ y)
                q, al = -flat_grad, [0.0] * len(old_dirs)
                for i in range(len(old_dirs) - 1, -1, -1):
                    al[i] = float(old_stps[i] @ q) * ro[i]
                    q = q - al[i] * old_dirs[i]
                d = r = (q * h_diag).astype(flat_grad.dtype)
                for i in range(len(old_dirs)):
                    r = r + (al[i] - float(old_dirs[i] @ r) * ro[i]) * old_stps[i]
                d = r.astype(flat_grad.dtype)
            prev_grad, prev_loss = flat_grad.copy(), loss
            t = min(1.0, 1.0 / float(np.abs(flat_grad).sum())) * lr if state["n_iter"] == 1 else lr
            if float(flat_grad @ d) > -tol_change:
                break
            self._add(t, d)
            done = False
            if n_iter != max_iter:
                loss = _value(self._evaluate(closure))
                flat_grad = self._flat_grad()
                done = bool(np.abs(flat_grad).max() <= tol_grad)
                evals += 1
                state["func_evals"] += 1
            if n_iter == max_iter or evals >= max_eval or done:
                break
            if np.abs(d * t).max() <= tol_change or abs(loss - prev_loss) < tol_change:
                break
        state.update(d=d, t=t, old_dirs=old_dirs, old_stps=old_stps, ro=ro, H_diag=h_diag,
                     prev_flat_grad=prev_grad, prev_loss=loss)
        return orig_loss


def _value(loss: Any) -> float:
    """A closure's loss as a number (read without the warning `float(tensor)` gives)."""
    return float(loss.arr) if isinstance(loss, Tensor) else float(loss)


from . import lr_scheduler  # noqa: E402,F401 - torch.optim.lr_scheduler


def __getattr__(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(name)
    raise NotSupportedByEngine(f"torch.optim.{name}")
