"""Static recall on the engine's realistic programs (`tests/engine/programs/`):
each program's outcome under real PyTorch and under burn's strict tape is
measured (`tests/engine/test_programs.py`, `test_strict_torch.py`; the table of
`docs/engine.md`). `tapelint check` must report a finding at the failing line or
at its cause when a program fails, and nothing when it runs clean: recall and
precision on code written after real bug reports, program by program."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Optional

import pytest

from tapelint.diagnostics import Semantics
from tapelint.lint import lint_source
from tapelint.settings import Settings

PROGRAMS_DIR = Path(__file__).parent / "engine" / "programs"
ENGINE_DOC = Path(__file__).resolve().parents[1] / "docs" / "engine.md"
SEMANTICS = ("torch", "strict")

# program -> (outcome under torch semantics, under strict), as docs/engine.md's
# table gives them (checked against it below): "ok", or "<error kind>, line N".
OUTCOMES: dict[str, tuple[str, str]] = {
    "a2c_two_backwards": ("second-backward, line 23", "tape-consumed, line 23"),
    "actor_critic_normal": ("ok", "ok"),
    "beta_bernoulli_policy": ("ok", "ok"),
    "cnn3d_cached_features": ("second-backward, line 19", "tape-consumed, line 19"),
    "cnn3d_volumes": ("ok", "ok"),
    "cnn_classifier": ("ok", "ok"),
    "cnn_total_loss": ("ok", "ok"),
    "custom_function_mlp": ("ok", "ok"),
    "custom_function_twice": ("second-backward, line 14", "tape-consumed, line 23"),
    "dcgan_conv": ("ok", "ok"),
    "ddpm_noise_step": ("ok", "ok"),
    "dirichlet_portfolio": ("ok", "ok"),
    "dirichlet_reused_entropy": ("second-backward, line 19", "tape-consumed, line 19"),
    "einsum_attention": ("ok", "ok"),
    "gamma_rate_regression": ("ok", "ok"),
    "gan_detached": ("ok", "ok"),
    "gan_no_detach": ("second-backward, line 22", "tape-consumed, line 22"),
    "gru_char_rnn": ("ok", "ok"),
    "inplace_activation": ("inplace, line 10", "inplace, line 10"),
    "lbfgs_fit": ("ok", "ok"),
    "legacy_style_model": ("ok", "ok"),
    "lstm_lm_detached": ("ok", "ok"),
    "lstm_lm_no_detach": ("second-backward, line 29", "tape-consumed, line 29"),
    "lstm_stateful_tagger": ("ok", "ok"),
    "maml_sine": ("ok", "tape-consumed, line 24"),
    "maml_torch_func": ("ok", "unsupported"),
    "packed_sequences": ("ok", "ok"),
    "per_sample_grad_clipping": ("ok", "unsupported"),
    "pinn_cached_derivative": ("second-backward, line 15", "tape-consumed, line 15"),
    "pinn_heat": ("ok", "tape-consumed, line 17"),
    "ppo_advantage_outside_epochs": ("second-backward, line 27", "tape-consumed, line 27"),
    "ppo_reused_distribution": ("second-backward, line 21", "tape-consumed, line 21"),
    "reinforce_categorical": ("ok", "ok"),
    "reinforce_stale_log_probs": ("second-backward, line 22", "tape-consumed, line 22"),
    "seq2seq_attention_teacher": ("ok", "ok"),
    "siamese_cdist": ("ok", "ok"),
    "simclr_ntxent": ("ok", "ok"),
    "step_between_backwards": ("inplace, line 14", "tape-consumed, line 14"),
    "superres_bicubic": ("ok", "ok"),
    "transformer_cached_memory": ("second-backward, line 19", "tape-consumed, line 19"),
    "transformer_classifier": ("ok", "ok"),
    "transformer_seq2seq": ("ok", "ok"),
    "vae_gaussian": ("ok", "ok"),
    "wgan_gp": ("ok", "tape-consumed, line 25"),
}

# What the linter reports on a failing program, per semantics: the failing
# backward, or the line that causes it (the node computed once before the loop,
# the carried state). Programs that run clean are expected to report nothing,
# except the memory finding below. `_REUSE`: what both semantics report.
_REUSE: dict[str, set[tuple[str, int]]] = {
    "a2c_two_backwards": {("TL002", 23)},
    "cnn3d_cached_features": {("TL001", 14)},
    "custom_function_twice": {("TL002", 23)},
    "dirichlet_reused_entropy": {("TL002", 19)},
    "gan_no_detach": {("TL002", 22)},
    "lstm_lm_no_detach": {("TL005", 26)},
    "pinn_cached_derivative": {("TL001", 10)},
    "ppo_advantage_outside_epochs": {("TL001", 18)},
    "ppo_reused_distribution": {("TL001", 12)},
    "reinforce_stale_log_probs": {("TL001", 17)},
    "step_between_backwards": {("TL007", 14)},
    "transformer_cached_memory": {("TL001", 14)},
}
FINDINGS: dict[str, dict[str, set[tuple[str, int]]]] = {
    # cnn_total_loss runs, but every iteration's graph stays alive in `total_loss`
    # (TL003 is a memory finding, reported under torch semantics).
    "torch": {**_REUSE, "cnn_total_loss": {("TL003", 17)}},
    "strict": _REUSE,
}

# Failing programs the linter misses today, each with why; strict xfails, so the
# test says so the day one is found. A finding at the failing line or at one of
# the lines named here (the cause) counts.
MISSED: dict[tuple[str, str], tuple[str, frozenset[int]]] = {
    ("inplace_activation", "torch"): (
        "an in-place change of an activation a backward saved (`h *= 2.0` after sigmoid): "
        "no rule reports in-place modification of saved activations", frozenset({8, 10})),
    ("inplace_activation", "strict"): (
        "an in-place change of an activation a backward saved (`h *= 2.0` after sigmoid): "
        "no rule reports in-place modification of saved activations", frozenset({8, 10})),
}
# Failing programs the linter stays silent on by design: a walk with
# `create_graph=True` is trusted under both semantics (fixtures/README.md:
# second-order terms stay a negative; burn's double backward is another API,
# so porting them is not a matter of a detach or a combined loss).
BY_DESIGN = {("maml_sine", "strict"), ("pinn_heat", "strict"), ("wgan_gp", "strict")}


def _failing_line(outcome: str) -> Optional[int]:
    found = re.fullmatch(r"[a-z-]+, line (\d+)", outcome)
    return int(found.group(1)) if found else None


def _reported(name: str, semantics: str) -> set[tuple[str, int]]:
    path = PROGRAMS_DIR / f"{name}.py"
    result = lint_source(path.read_text(encoding="utf-8"), str(path), Settings(semantics=Semantics(semantics)))
    assert not result.errors, result.errors
    return {(d.code, d.range.start.line) for d in result.diagnostics}


def _cases() -> list:
    cases = []
    for name in sorted(OUTCOMES):
        for semantics in SEMANTICS:
            marks = []
            if (name, semantics) in MISSED:
                marks.append(pytest.mark.xfail(strict=True, reason=MISSED[name, semantics][0]))
            cases.append(pytest.param(name, semantics, id=f"{name}-{semantics}", marks=marks))
    return cases


def test_the_table_covers_every_program():
    assert sorted(OUTCOMES) == sorted(p.stem for p in PROGRAMS_DIR.glob("*.py"))


def test_the_table_is_the_measured_one():
    """The outcomes here are docs/engine.md's (engine, torch semantics / engine,
    strict columns), which `tests/engine/` measures against PyTorch and the tracker."""
    rows = {}
    header: list[str] = []
    for line in ENGINE_DOC.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells[:1] == ["program"]:
            header = cells
        elif header and len(cells) == len(header) and cells[0] in OUTCOMES:
            rows[cells[0]] = (cells[header.index("engine, torch semantics")], cells[header.index("engine, strict")])
    assert rows == OUTCOMES


def test_every_failing_program_is_declared():
    """A failing program has an expected finding or a stated reason it is missed;
    a clean one has neither (but for a memory finding on a program that runs)."""
    for index, semantics in enumerate(SEMANTICS):
        for name, outcomes in OUTCOMES.items():
            fails = _failing_line(outcomes[index]) is not None
            case = (name, semantics)
            declared = name in FINDINGS[semantics] or case in MISSED or case in BY_DESIGN
            memory_only = FINDINGS[semantics].get(name, set()) and all(
                code == "TL003" for code, _ in FINDINGS[semantics][name])
            assert declared == fails or (memory_only and not fails), (name, semantics)


@pytest.mark.parametrize("name,semantics", _cases())
def test_the_linter_finds_what_fails_and_nothing_else(name: str, semantics: str):
    reported = _reported(name, semantics)
    if (name, semantics) in MISSED:
        lines = MISSED[name, semantics][1] | {_failing_line(OUTCOMES[name][SEMANTICS.index(semantics)])}
        assert reported and all(line in lines for _, line in reported), reported
        return
    if (name, semantics) in BY_DESIGN:
        assert reported == set(), reported
        return
    assert reported == FINDINGS[semantics].get(name, set())
