# fixture: a distribution transform with cache_size=1 returns its cached output when called again with the same input; the second autograd.grad of t(x) walks the graph the first one already freed
# source: https://github.com/pyro-ppl/pyro/pull/2283
# expect: TL004 36 torch strict
# torch: fails 36 node 28
# strict: fails 36 node 28

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
        return y

    def _call(self, x):
        return x.exp()


x = torch.tensor(2.0, requires_grad=True)
t = ExpTransform(cache_size=1)
(g1,) = torch.autograd.grad(t(x), x)
print(g1)
# error on the second call: t(x) is the cached y whose ExpBackward0 the first grad freed
(g2,) = torch.autograd.grad(t(x), x)
print(g2)
