"""The options users reach for (ruff's names), mistyped commands, colour,
exit codes and exclusions: named files, standard input and the walk agree."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from test_cli import run

from tapelint.reporters import FORMATS, REPORTERS

TWICE = "import torch\nw = torch.ones(2, requires_grad=True)\nloss = (w * w).sum()\nloss.backward()\nloss.backward()\n"
ACCUMULATES = (
    "import torch\nw = torch.ones(2, requires_grad=True)\ntotal = 0\nfor step in range(3):\n"
    "    loss = (w * w).sum()\n    loss.backward()\n    total += loss\nprint(total)\n"
)
CLEAN = "x = 1\n"


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "twice.py").write_text(TWICE)
    (tmp_path / "acc.py").write_text(ACCUMULATES)
    (tmp_path / "acc2.py").write_text(ACCUMULATES)
    monkeypatch.chdir(tmp_path)
    for name in ("NO_COLOR", "FORCE_COLOR", "TAPELINT_OUTPUT_FORMAT", "TERM"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path


# --- mistyped commands -------------------------------------------------------------


@pytest.mark.parametrize(
    "argv, meant",
    [(["chekc", "."], "check"), (["server"], "lsp"), (["version"], "--version"), (["ruls"], "rules"),
     (["confrim", "a.py"], "confirm")],
)
def test_a_mistyped_command_is_named_not_linted(project: Path, capsys, argv: list[str], meant: str) -> None:
    code, out, err = run(capsys, *argv)
    assert (code, out) == (2, "")
    assert err == f"tapelint: error: unknown command {argv[0]!r}; did you mean {meant!r}?\n"


def test_clean_removes_the_cache_of_a_run_and_only_a_cache(project: Path, capsys, monkeypatch) -> None:
    monkeypatch.delenv("TAPELINT_NO_CACHE")
    (project / "t.py").write_text(TWICE)
    assert run(capsys, "check", "t.py")[0] == 1
    assert (project / ".tapelint_cache" / ".gitignore").read_text().endswith("*\n")
    code, _, err = run(capsys, "clean")
    assert (code, err) == (0, f"tapelint: removed {project / '.tapelint_cache'}\n")
    assert not (project / ".tapelint_cache").exists()
    assert run(capsys, "clean")[2] == f"tapelint: no cache at {project / '.tapelint_cache'}\n"
    (project / "mine").mkdir()
    code, _, err = run(capsys, "clean", "--cache-dir", "mine")
    assert code == 2 and "does not look like a tapelint cache" in err and (project / "mine").is_dir()


def test_an_existing_path_is_a_path_even_if_it_reads_like_a_command(project: Path, capsys) -> None:
    (project / "chekc").mkdir()
    (project / "chekc" / "t.py").write_text(TWICE)
    code, out, _ = run(capsys, "chekc")
    assert code == 1 and "chekc/t.py:5:1: TL004" in out
    # Not close to any command: a missing path, reported as one.
    code, out, _ = run(capsys, "trainer")
    assert code == 1 and out.startswith("trainer: error: no such file or directory")


# --- output options --------------------------------------------------------------------


def test_statistics_text_and_json(project: Path, capsys) -> None:
    code, out, _ = run(capsys, "check", "--statistics")
    assert code == 1
    assert out == "2\tTL003\t[*] tracked-accumulation\n1\tTL004\t[ ] repeated-backward\n"
    code, out, _ = run(capsys, "check", "--statistics", "--format", "json")
    assert json.loads(out) == [
        {"code": "TL003", "name": "tracked-accumulation", "count": 2, "fixable": True},
        {"code": "TL004", "name": "repeated-backward", "count": 1, "fixable": False},
    ]
    code, _, err = run(capsys, "check", "--statistics", "--format", "sarif")
    assert code == 2 and "--statistics prints text or json, not sarif" in err


def test_output_file(project: Path, capsys) -> None:
    code, out, _ = run(capsys, "check", "--output-file", "reports/out.json", "--format", "json", "--color", "always")
    assert (code, out) == (1, "")
    document = json.loads((project / "reports" / "out.json").read_text())
    assert len(document["diagnostics"]) == 3
    code, out, _ = run(capsys, "check", "twice.py", "-o", "out.txt")
    assert (project / "out.txt").read_text().startswith("twice.py:5:1: TL004")
    code, _, err = run(capsys, "check", "-o", "twice.py/x.txt")
    assert code == 2 and err.startswith("tapelint: error: cannot write --output-file twice.py/x.txt: ")


def test_exit_zero(project: Path, capsys) -> None:
    code, out, _ = run(capsys, "check", "--exit-zero")
    assert code == 0 and "Found 3 diagnostics" in out
    assert run(capsys, "check", "--exit-zero", "nope.py")[0] == 0
    assert run(capsys, "check", "--exit-zero", "--select", "bogus")[0] == 2  # usage errors still exit 2


def test_output_format_alias_variable_and_config_key(project: Path, capsys, monkeypatch) -> None:
    def shape(*argv: str) -> str:
        out = run(capsys, "check", "twice.py", *argv)[1]
        if out.startswith("{") and '"$schema"' in out:
            return "sarif"
        if out.startswith("{"):
            return "json"
        return "github" if out.startswith("::") else "text"

    assert shape() == "text"
    assert shape("--output-format", "json") == "json"
    (project / "pyproject.toml").write_text('[tool.tapelint]\noutput-format = "github"\n')
    assert shape() == "github"
    monkeypatch.setenv("TAPELINT_OUTPUT_FORMAT", "sarif")
    assert shape() == "sarif"  # the variable beats the configuration ...
    assert shape("--format", "json") == "json"  # ... and the command line beats both
    monkeypatch.setenv("TAPELINT_OUTPUT_FORMAT", "xml")
    code, _, err = run(capsys, "check", "twice.py")
    assert code == 2 and "TAPELINT_OUTPUT_FORMAT='xml': expected one of text, json, sarif, github, lsp" in err
    monkeypatch.delenv("TAPELINT_OUTPUT_FORMAT")
    (project / "pyproject.toml").write_text('[tool.tapelint]\noutput-format = "xml"\n')
    code, _, err = run(capsys, "check", "twice.py")
    assert code == 2 and "output-format: expected one of 'text', 'json'" in err


def test_the_format_names_are_the_reporters() -> None:
    assert tuple(REPORTERS) == FORMATS
    assert all(callable(REPORTERS[name]) for name in FORMATS)


def test_extend_per_file_ignores(project: Path, capsys) -> None:
    code, out, _ = run(capsys, "check", "--extend-per-file-ignores", "acc*.py:tracked-accumulation", "--format", "json")
    assert [d["code"] for d in json.loads(out)["diagnostics"]] == ["TL004"]
    (project / "pyproject.toml").write_text('[tool.tapelint]\nper-file-ignores = {"twice.py" = ["TL004"]}\n')
    code, out, _ = run(capsys, "check", "--extend-per-file-ignores", "acc.py:TL003", "--format", "json")
    assert [d["path"] for d in json.loads(out)["diagnostics"]] == ["acc2.py"]  # both tables apply
    code, _, err = run(capsys, "check", "--extend-per-file-ignores", "TL003")
    assert code == 2 and "expected GLOB:RULES" in err


def test_show_settings(project: Path, capsys) -> None:
    (project / "pyproject.toml").write_text('[tool.tapelint]\nignore = ["TL006"]\nper-file-ignores = {"acc.py" = ["TL003"]}\n')
    code, out, _ = run(capsys, "check", "acc.py", "--show-settings", "--semantics", "strict")
    assert code == 0
    rows = dict(line.split(None, 1) if not line.startswith(("enabled", "ignored", "report-")) else
                (line[:28].strip(), line[28:].strip()) for line in out.splitlines())
    assert rows["file"].strip() == "acc.py"
    assert rows["configuration"].strip() == "pyproject.toml"
    assert rows["semantics"].strip() == "strict"
    assert rows["enabled rules"] == "TL001, TL002, TL004, TL005, TL007, TL900"
    assert rows["ignored here (per-file)"] == "TL003"


# --- colour ----------------------------------------------------------------------------


def test_color_choices_and_environment(project: Path, capsys, monkeypatch) -> None:
    def colored(*argv: str) -> bool:
        return "\x1b[" in run(capsys, "check", "twice.py", *argv)[1]

    assert not colored()  # captured output is not a terminal
    assert colored("--color", "always")
    monkeypatch.setenv("FORCE_COLOR", "1")
    assert colored() and not colored("--color", "never") and not colored("--no-color")
    monkeypatch.setenv("NO_COLOR", "1")
    assert not colored() and colored("--color", "always")


def test_term_dumb_gets_no_colour_on_a_terminal(project: Path) -> None:
    """A real pseudo-terminal: auto colours it, unless TERM=dumb."""
    pty = pytest.importorskip("pty")
    import os

    def output(term: str) -> bytes:
        env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
        env["TERM"] = term
        primary, secondary = pty.openpty()
        done = subprocess.run([sys.executable, "-m", "tapelint", "check", "twice.py"], stdout=secondary,
                              stderr=subprocess.DEVNULL, env=env, cwd=project, timeout=120)
        os.close(secondary)
        chunks = []
        while True:
            try:
                chunk = os.read(primary, 65536)
            except OSError:
                break
            if not chunk:
                break
            chunks.append(chunk)
        os.close(primary)
        assert done.returncode == 1
        return b"".join(chunks)

    assert b"\x1b[" in output("xterm-256color")
    assert b"\x1b[" not in output("dumb")


# --- exclusions: named paths, standard input, the walk ------------------------------------


def test_a_named_but_excluded_file_says_so(project: Path, capsys) -> None:
    code, out, err = run(capsys, "check", "twice.py", "--exclude", "twice.py")
    assert (code, out) == (0, "")
    assert err == "tapelint: warning: twice.py is excluded by `twice.py` (--exclude); not checked\n"
    (project / "pyproject.toml").write_text('[tool.tapelint]\nextend-exclude = ["acc*.py"]\n')
    code, out, err = run(capsys, "check", "acc.py", "twice.py")
    assert code == 1 and "acc.py" not in out and "no Python files" not in err
    assert "acc.py is excluded by `acc*.py` (extend-exclude in pyproject.toml); not checked" in err
    # --no-force-exclude: a named path is checked whatever the globs say (ruff's default).
    code, out, _ = run(capsys, "check", "acc.py", "--no-force-exclude")
    assert code == 1 and "acc.py:7:5: TL003" in out


def _stdin(args: list[str], text: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tapelint", *args], input=text, text=True, cwd=cwd,
                          capture_output=True, timeout=120)


def test_standard_input_honours_the_exclusions_like_a_named_file(project: Path) -> None:
    (project / "pyproject.toml").write_text('[tool.tapelint]\nextend-exclude = ["legacy/*"]\n')
    excluded = _stdin(["check", "-", "--stdin-filename", "legacy/t.py"], TWICE, project)
    assert (excluded.returncode, excluded.stdout) == (0, "")
    assert "legacy/t.py is excluded by `legacy/*` (extend-exclude in pyproject.toml)" in excluded.stderr
    by_flag = _stdin(["check", "-", "--stdin-filename", "t.py", "--exclude", "t.py", "--format", "json"], TWICE, project)
    assert by_flag.returncode == 0 and json.loads(by_flag.stdout)["diagnostics"] == []
    forced_off = _stdin(["check", "-", "--stdin-filename", "legacy/t.py", "--no-force-exclude"], TWICE, project)
    assert forced_off.returncode == 1 and "legacy/t.py:5:1: TL004" in forced_off.stdout


def test_the_walk_respects_gitignore_and_skips_build_and_dist(project: Path, capsys) -> None:
    (project / ".git").mkdir()
    (project / ".gitignore").write_text("generated/\n*_gen.py\n!keep_gen.py\n")
    for folder in ("generated", "build", "dist", "src"):
        (project / folder).mkdir()
        (project / folder / "t.py").write_text(TWICE)
    (project / "src" / "x_gen.py").write_text(TWICE)
    (project / "src" / "keep_gen.py").write_text(TWICE)
    (project / "src" / ".gitignore").write_text("t.py\n")

    def checked(*argv: str) -> list[str]:
        code, out, _ = run(capsys, "check", "--select", "TL004", "--format", "json", *argv)
        return sorted(d["path"] for d in json.loads(out)["diagnostics"])

    assert checked() == ["src/keep_gen.py", "twice.py"]
    assert checked("--no-respect-gitignore") == ["generated/t.py", "src/keep_gen.py", "src/t.py", "src/x_gen.py", "twice.py"]
    # Named explicitly, an ignored file or a build/ folder is checked.
    assert checked("src/x_gen.py", "build") == ["build/t.py", "src/x_gen.py"]
    # Outside a git work tree, .gitignore means nothing (as for git and ruff).
    (project / ".git").rmdir()
    assert "generated/t.py" in checked()


def test_json_schema_option_alias_in_help(project: Path, capsys) -> None:
    code, out, _ = run(capsys, "check", "--help")
    assert code == 0
    for option in ("--output-format", "--statistics", "--output-file", "--exit-zero", "--show-settings",
                   "--extend-per-file-ignores", "--color", "--force-exclude", "--respect-gitignore"):
        assert option in out
