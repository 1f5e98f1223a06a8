# fixture: fix of the transform-cache report: a hook on the cached output clears the cache when a backward walks it, so the next call recomputes
# source: https://github.com/pyro-ppl/pyro/pull/2283
# torch: ok
# strict: ok

import torch


class ExpTransform:
    """y = exp(x), remembering the last (x, y) pair like torch.distributions' Transform."""

    def __init__(self, cache_size=0):
        self._cache_size = cache_size
        self._cached_x_y = None, None

    def __call__(self, x):
        if self._cache_size == 0:
            return self._call(x)
        x_old, y_old = self._cached_x_y
        if x is x_old:
            return y_old  # the same tensor, with the graph of the first call
        y = self._call(x)
        self._cached_x_y = x, y

        def _hook(_):  # the PR's fix: a backward through y empties the cache
            self._cached_x_y = None, None

        y.register_hook(_hook)
        return y

    def _call(self, x):
        return x.exp()


x = torch.tensor(2.0, requires_grad=True)
t = ExpTransform(cache_size=1)
(g1,) = torch.autograd.grad(t(x), x)
print(g1)
# the first grad emptied the cache, so t(x) recomputes exp(x) with a fresh graph
(g2,) = torch.autograd.grad(t(x), x)
print(g2)
