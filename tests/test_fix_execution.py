"""Every edit tapelint offers, safe and unsafe, on every fixture, fixture
project and realistic program, applied alone and run under real PyTorch and
on the engine (`fix_harness`): it must parse, lint clean for its finding,
run without a new exception and leave the model learning."""

from __future__ import annotations

import atexit
import shutil
import tempfile
from functools import lru_cache
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("numpy")

import fix_harness  # noqa: E402
import fix_programs_shapes  # noqa: E402
from fix_harness import Target, Variant  # noqa: E402
from fix_programs import D_STEP, G_STEP, GAN, ONLY_PATH  # noqa: E402
from fix_programs_roles import DICT_OUT, READS_FIRST, READS_IMG, TUPLE_OUT, user_gan  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
PROGRAMS = Path(__file__).resolve().parent / "engine" / "programs"


def _shared_programs() -> dict[str, str]:
    """The fix tests' own programs (`fix_programs*.py`): GAN steps in either
    order, with named and with anonymous roles, a value that is a
    backward's only way to its parameter, and the shape-chosen cases."""
    out = {"gan_d_first": GAN.format(first=D_STEP, second=G_STEP),
           "gan_g_first": GAN.format(first=G_STEP, second=D_STEP),
           "only_path": ONLY_PATH, "other_path": ONLY_PATH.replace("(feats * 2)", "(feats * w)")}
    for first in (True, False):
        for optimizer in ("opt1", "opt2"):
            out[f"user_gan_{first}_{optimizer}"] = user_gan(first, optimizer)
        out[f"user_gan_{first}_tuple"] = user_gan(first, "opt2", TUPLE_OUT, READS_FIRST)
        out[f"user_gan_{first}_dict"] = user_gan(first, "opt2", DICT_OUT, READS_IMG)
    out.update(fix_programs_shapes.runnable())
    return out


def _targets() -> list[Target]:
    singles = [Target(p, p.parent) for p in sorted(FIXTURES.glob("*.py")) + sorted(PROGRAMS.glob("*.py"))]
    projects = [Target(p, project, project=True) for project in sorted((FIXTURES / "projects").iterdir())
                if project.is_dir() for p in sorted(project.rglob("*.py"))]
    shared = Path(tempfile.mkdtemp(prefix="tapelint-fix-programs-"))
    atexit.register(shutil.rmtree, shared, True)
    for name, source in _shared_programs().items():
        (shared / f"{name}.py").write_text(source, encoding="utf-8")
    return singles + projects + [Target(p, shared) for p in sorted(shared.glob("*.py"))]


TARGETS = _targets()
VARIANTS = fix_harness.variants(TARGETS)
IDS = [v.label for v in VARIANTS]


@lru_cache(maxsize=1)
def _runs(work: str) -> tuple[dict, dict, dict]:
    """(originals' programs, torch reports by program, engine reports by (program, semantics))."""
    targets = sorted({v.target for v in VARIANTS}, key=lambda t: str(t.path))
    originals = fix_harness.materialize(targets, VARIANTS, Path(work))
    torch_reports = fix_harness.run_under_torch(list(originals.values()) + [v.program for v in VARIANTS], Path(work))
    engine = fix_harness.run_on_engine([(v.program, s) for v in VARIANTS for s in v.semantics])
    return originals, torch_reports, engine


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> tuple[dict, dict, dict]:
    return _runs(str(tmp_path_factory.mktemp("fix_execution")))


@pytest.mark.parametrize("variant", VARIANTS, ids=IDS)
def test_fixed_program_lints_clean_for_its_finding(variant: Variant):
    assert fix_harness.lint_problems(variant) == [], variant.description


@pytest.mark.parametrize("variant", VARIANTS, ids=IDS)
def test_fixed_program_runs_and_learns_under_torch(variant: Variant, runs):
    originals, reports, _ = runs
    original = reports[str(originals[variant.target])]
    fixed = reports[str(variant.program)]
    assert fix_harness.torch_problems(variant, original, fixed) == [], variant.description


@pytest.mark.parametrize("variant", VARIANTS, ids=IDS)
def test_fixed_program_runs_on_the_engine(variant: Variant, runs):
    assert fix_harness.engine_problems(variant, runs[2]) == [], variant.description


def test_every_fix_kind_is_verified():
    kinds = {(v.code, v.kind) for v in VARIANTS}
    assert kinds >= {
        ("TL001", "recompute"), ("TL001", "detach"), ("TL002", "combine"), ("TL002", "detach"),
        ("TL003", "item"), ("TL003", "detach"), ("TL004", "remove"), ("TL004", "recompute"),
        ("TL005", "detach"), ("TL006", "combine"),
    }
    assert {v.safety for v in VARIANTS} == {"safe", "unsafe"}


# Wrong fixes the harness must reject: the generator's loss detached (no
# error, the generator's optimizer steps without gradients) and the only
# path to the parameters detached (the backward then raises).
GAN_G_FIRST = GAN.format(first=G_STEP, second=D_STEP)
WRONG = {
    "frozen_generator": (GAN_G_FIRST, "g_loss = bce(D(fake)", "g_loss = bce(D(fake.detach())", "TL002",
                         "now steps only parameters without gradients"),
    "detached_root": (ONLY_PATH, "w.exp()", "w.exp().detach()", "TL001", "does not require grad"),
    "right_fix": (GAN_G_FIRST, "d_loss = bce(D(fake)", "d_loss = bce(D(fake.detach())", "TL002", None),
}


@pytest.fixture(scope="module")
def wrong_runs(tmp_path_factory) -> dict[str, tuple[Variant, dict, dict]]:
    """Each case's variant with the torch reports of its original and of it
    (all in one PyTorch process)."""
    work = tmp_path_factory.mktemp("wrong_fixes")
    cases = {}
    for name, (source, old, new, code, _) in WRONG.items():
        original = work / name / "original" / "prog.py"
        original.parent.mkdir(parents=True)
        original.write_text(source)
        variant = Variant(Target(original, original.parent), source.replace(old, new, 1), code, 1, "detach",
                          "unsafe", "", ["torch"], folder=work / name / "variant")
        variant.folder.mkdir()
        variant.program.write_text(variant.text)
        cases[name] = (variant, original)
    programs = [p for variant, original in cases.values() for p in (original, variant.program)]
    reports = fix_harness.run_under_torch(programs, work, workers=1)
    return {name: (v, reports[str(o)], reports[str(v.program)]) for name, (v, o) in cases.items()}


@pytest.mark.parametrize("name", sorted(WRONG))
def test_harness_tells_a_wrong_fix_from_a_right_one(name, wrong_runs):
    problem = WRONG[name][4]
    variant, original, fixed = wrong_runs[name]
    problems = fix_harness.torch_problems(variant, original, fixed)
    if problem is None:
        assert problems == [] and fix_harness.lint_problems(variant) == []
    else:
        assert any(problem in p for p in problems), problems
