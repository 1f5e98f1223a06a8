"""GAN steps whose names say nothing of roles (`net_a`, `net_b`, `opt1`,
`opt2`): which loss is the discriminator's can only come from the
analysis (which optimizer steps after each backward, and which parameters
each loss reaches only through the generated sample)."""

USER_GAN = """\
import torch
import torch.nn as nn


class NetA(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(2, 2)

    def forward(self, z):
{generator_returns}


class NetB(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(2, 1)

    def forward(self, x):
{discriminator_reads}


torch.manual_seed(0)
net_a = NetA()
net_b = NetB()
opt1 = torch.optim.SGD({opt1_over}.parameters(), lr=0.1)
opt2 = torch.optim.SGD({opt2_over}.parameters(), lr=0.1)
bce = nn.BCEWithLogitsLoss()
ones, zeros = torch.ones(4, 1), torch.zeros(4, 1)
for step in range(3):
    out = net_a(torch.randn(4, 2))
{first}
{second}
"""
TENSOR_OUT = "        return torch.tanh(self.fc(z))"
TUPLE_OUT = "        h = torch.tanh(self.fc(z))\n        return h, h.sum()"
DICT_OUT = '        return {"img": torch.tanh(self.fc(z))}'
READS_TENSOR = "        return self.fc(x)"
READS_FIRST = "        return self.fc(x[0])"
READS_IMG = '        return self.fc(x["img"])'

# The generator's half (its optimizer over `net_a`) and the discriminator's (over `net_b`).
A_HALF = """\
    {opt_a}.zero_grad()
    loss_p = bce(net_b(out), ones)
    loss_p.backward()
    {opt_a}.step()"""
B_HALF = """\
    {opt_b}.zero_grad()
    loss_q = bce(net_b(out), zeros) + bce(net_b(torch.randn(4, 2)), ones)
    loss_q.backward()
    {opt_b}.step()"""


def user_gan(generator_first: bool, a_optimizer: str = "opt2", returns: str = TENSOR_OUT,
             reads: str = READS_TENSOR) -> str:
    """The program, with `a_optimizer` (`opt1` or `opt2`) the one over `net_a`."""
    b_optimizer = "opt1" if a_optimizer == "opt2" else "opt2"
    halves = [A_HALF.format(opt_a=a_optimizer), B_HALF.format(opt_b=b_optimizer)]
    first, second = halves if generator_first else halves[::-1]
    over = {a_optimizer: "net_a", b_optimizer: "net_b"}
    return USER_GAN.format(generator_returns=returns, discriminator_reads=reads, opt1_over=over["opt1"],
                           opt2_over=over["opt2"], first=first, second=second)
# Returns a dict on some calls: `out` may be either, so `.detach()` on it may raise.
MAYBE_DICT_OUT = (
    '        if z.shape[0] > 8:\n            return {"img": torch.zeros(4, 2)}\n        return torch.tanh(self.fc(z))')
