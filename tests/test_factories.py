"""Models from library factories (`from_pretrained`, `get_peft_model`,
`accelerator.prepare`, `torch.compile`, DDP/FSDP, `instantiate`) are modules
with parameters: what calling them returns is tracked, under `no_grad` it is
not, and `generate(...)` returns untracked token ids (`torch_api`)."""

from __future__ import annotations

import textwrap

import pytest

from tapelint.lint import lint_source
from tapelint.settings import Settings

# `{make}` builds the model; the evaluation loop accumulates the loss without
# no_grad (TL003 at line 8), or (NEGATIVE) does what the correct idiom does.
EVAL_LOOP = """\
import torch
{imports}
model = {make}
total = 0.0
for batch in [torch.randn(2, 4)] * 3:
    outputs = model(input_ids=batch, labels=batch)
    loss = outputs.loss
    total += loss
print(total)
"""

FACTORIES = [
    ("from transformers import AutoModelForCausalLM", 'AutoModelForCausalLM.from_pretrained("gpt2")'),
    ("import transformers", 'transformers.AutoModel.from_pretrained("bert-base-uncased")'),
    ("from transformers import AutoModelForCausalLM\nfrom peft import get_peft_model",
     'get_peft_model(AutoModelForCausalLM.from_pretrained("gpt2"), None)'),
    ("from peft import get_peft_model", "get_peft_model(torch.nn.Linear(4, 4), None)"),
    ("from hydra.utils import instantiate", "instantiate(cfg.model)"),
    ("import hydra", "hydra.utils.instantiate(cfg.model)"),
    ("", "torch.compile(torch.nn.Linear(4, 4))"),
    ("from torch.nn.parallel import DistributedDataParallel as DDP", "DDP(torch.nn.Linear(4, 4))"),
    ("from torch.distributed.fsdp import FullyShardedDataParallel as FSDP", "FSDP(torch.nn.Linear(4, 4))"),
    ("from accelerate import Accelerator\naccelerator = Accelerator()",
     "accelerator.prepare(torch.nn.Linear(4, 4))"),
    ("from transformers import AutoModelForCausalLM", 'AutoModelForCausalLM.from_pretrained("gpt2").to("cpu").eval()'),
]


def diagnostics(code: str) -> list[tuple[str, int]]:
    result = lint_source(textwrap.dedent(code), "train.py", Settings())
    return sorted((d.code, d.range.start.line) for d in result.diagnostics)


@pytest.mark.parametrize("imports,make", FACTORIES, ids=[m.split("(")[0] for _, m in FACTORIES])
def test_factory_result_is_a_module_whose_outputs_are_tracked(imports, make):
    code = EVAL_LOOP.format(imports=imports, make=make)
    line = code.splitlines().index("    total += loss") + 1
    assert diagnostics(code) == [("TL003", line)]


@pytest.mark.parametrize("imports,make", FACTORIES, ids=[m.split("(")[0] for _, m in FACTORIES])
def test_factory_outputs_under_no_grad_are_not_tracked(imports, make):
    code = EVAL_LOOP.format(imports=imports, make=make).replace(
        "    outputs = model(input_ids=batch, labels=batch)\n",
        "    with torch.no_grad():\n        outputs = model(input_ids=batch, labels=batch)\n")
    assert diagnostics(code) == []


def test_item_accumulation_is_clean():
    code = EVAL_LOOP.format(imports="from transformers import AutoModelForCausalLM",
                            make='AutoModelForCausalLM.from_pretrained("gpt2")')
    assert diagnostics(code.replace("total += loss", "total += loss.item()")) == []


def test_generate_returns_untracked_ids():
    code = """\
        import torch
        from transformers import AutoModelForCausalLM
        model = AutoModelForCausalLM.from_pretrained("gpt2")
        texts = []
        for prompt in [torch.zeros(1, 4)] * 3:
            ids = model.generate(prompt, max_new_tokens=4)
            texts.append(ids)
        """
    assert diagnostics(code) == []


def test_tokenizer_is_not_a_model():
    code = """\
        import torch
        from transformers import AutoTokenizer
        tokenizer = AutoTokenizer.from_pretrained("gpt2")
        lengths = []
        for text in ["a", "b"]:
            ids = tokenizer(text, return_tensors="pt")
            lengths.append(ids)
        """
    assert diagnostics(code) == []


def test_accelerator_prepare_returns_each_argument():
    """`model, opt, loader = accelerator.prepare(...)`: the model stays a model,
    and the loss a training loop sums without `.item()` is TL003."""
    code = """\
        import torch
        from accelerate import Accelerator
        accelerator = Accelerator()
        model = torch.nn.Linear(4, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        model, opt, loader = accelerator.prepare(model, opt, [torch.randn(2, 4)] * 3)
        total = 0.0
        for batch in loader:
            loss = model(batch).sum()
            accelerator.backward(loss)
            opt.step()
            total += loss
        """
    assert diagnostics(code) == [("TL003", 12)]


def test_loss_returned_by_the_model_is_backwarded_once_per_step():
    """`loss = model(x, y)` of a pretrained model in a correct loop: clean;
    the forward hoisted out of the loop: TL004 (the root walked every step)."""
    correct = """\
        import torch
        from transformers import AutoModelForCausalLM
        model = AutoModelForCausalLM.from_pretrained("gpt2")
        x = torch.randn(2, 4)
        for step in range(3):
            loss = model(x, labels=x).loss
            loss.backward()
        """
    assert diagnostics(correct) == []
    hoisted = """\
        import torch
        from transformers import AutoModelForCausalLM
        model = AutoModelForCausalLM.from_pretrained("gpt2")
        x = torch.randn(2, 4)
        loss = model(x, labels=x).loss
        for step in range(3):
            loss.backward()
        """
    assert diagnostics(hoisted) == [("TL004", 7)]
