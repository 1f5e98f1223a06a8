"""Command-line options shared by the commands that lint (`check`, `confirm`),
declared once so that a flag means the same everywhere, and turned into a
`Resolver` in one place.

This module imports only configuration and the standard library: declaring
options must not pull in the analysis, the reporters or the engine.
"""

from __future__ import annotations

import argparse
import os
from typing import TextIO

from tapelint.config import Overrides, Resolver, Selection, Selector, parse_selector
from tapelint.diagnostics import Semantics
from tapelint.settings import TARGET_VERSIONS, PythonVersion, parse_target_version

FORMAT_VARIABLE = "TAPELINT_OUTPUT_FORMAT"
COLOR_CHOICES = ("auto", "always", "never")


class UsageError(Exception):
    """A bad command line: reported as `tapelint: error: ...`, exit 2."""


def add_paths(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="*", metavar="PATH", default=["."], help="files or directories (default: .)")


def add_semantics(parser: argparse.ArgumentParser, default: str | None = None) -> None:
    parser.add_argument(
        "--semantics",
        choices=[s.value for s in Semantics],
        default=default,
        help="judge against PyTorch (default) or a strict tape that rejects every reuse",
    )


def add_format(parser: argparse.ArgumentParser, choices: tuple[str, ...]) -> None:
    """`--format` and its ruff spelling `--output-format`; None when not given
    (`TAPELINT_OUTPUT_FORMAT`, then the `output-format` key, then text)."""
    parser.add_argument("--format", "--output-format", dest="format", choices=choices, default=None,
                        help=f"output format (default: text; also {FORMAT_VARIABLE}, config output-format)")


def add_selection(parser: argparse.ArgumentParser) -> None:
    """Which files and rules: the options every linting command takes."""
    parser.add_argument("--select", action="append", default=[], metavar="RULES",
                        help="only these rules: comma-separated codes, code prefixes (TL00) or names")
    parser.add_argument("--extend-select", action="append", default=[], metavar="RULES",
                        help="also these rules (same forms as --select)")
    parser.add_argument("--ignore", action="append", default=[], metavar="RULES",
                        help="skip these rules (same forms as --select)")
    parser.add_argument("--extend-per-file-ignores", action="append", default=[], metavar="GLOB:RULES",
                        help="skip RULES in files matching GLOB (relative to the current directory), "
                             "on top of the configuration's per-file-ignores; repeatable")
    parser.add_argument("--config", metavar="PATH", help="use this pyproject.toml's [tool.tapelint] for every file")
    parser.add_argument("--isolated", action="store_true", help="ignore every configuration file")
    parser.add_argument("--exclude", "--extend-exclude", dest="exclude", action="append", default=[], metavar="GLOB",
                        help="skip matching files and directories, on top of the configured ones "
                             "(repeatable, or comma-separated)")
    parser.add_argument("--force-exclude", action=argparse.BooleanOptionalAction, default=True,
                        help="apply exclusions to paths named on the command line and to --stdin-filename too "
                             "(default: on)")
    parser.add_argument("--respect-gitignore", action=argparse.BooleanOptionalAction, default=True,
                        help="skip files that .gitignore ignores while walking directories (default: on)")
    parser.add_argument("--jobs", "-j", type=positive_int, default=None, metavar="N",
                        help="worker processes (default: one per core)")
    parser.add_argument("--file-timeout", type=positive_float, default=None, metavar="SECONDS",
                        help="CPU seconds one file may take (default: 120; config: file-timeout)")
    parser.add_argument("--file-memory-mb", type=positive_int, default=None, metavar="MB",
                        help="memory one file may take (default: 4096; config: file-memory-mb)")
    parser.add_argument("--target-version", metavar="VERSION", default=None,
                        help=f"the Python the code is written for, {TARGET_VERSIONS[0]} to {TARGET_VERSIONS[-1]}: "
                             "syntax newer than the running Python is then judged by libcst's parser (default: the "
                             "lower bound of requires-python, else the running Python; config: target-version)")
    parser.add_argument("--quiet", "-q", action="store_true", help="print diagnostics and errors only, no summary")


def resolver_from_args(args: argparse.Namespace) -> Resolver:
    """Settings per file: the nearest `[tool.tapelint]` under the command line
    (see `tapelint.config`). Raises `UsageError` and `ConfigError`."""
    overrides = Overrides(
        selection=Selection(
            select=selectors(args.select) if args.select else None,
            extend_select=selectors(args.extend_select),
            ignore=selectors(args.ignore),
        ),
        exclude=tuple(split(args.exclude)),
        per_file_ignores=tuple(_per_file_ignore(text) for text in getattr(args, "extend_per_file_ignores", [])),
        semantics=Semantics(args.semantics) if args.semantics else None,
        unsafe_fixes=getattr(args, "unsafe_fixes", None),
        report_unused_suppressions=getattr(args, "report_unused_suppressions", None),
        force_exclude=args.force_exclude,
        respect_gitignore=args.respect_gitignore,
        file_timeout=getattr(args, "file_timeout", None),
        file_memory_mb=getattr(args, "file_memory_mb", None),
        target_version=_target_version(getattr(args, "target_version", None)),
    )
    return Resolver(overrides, config_file=args.config, isolated=args.isolated)


def _target_version(text: str | None) -> PythonVersion | None:
    if text is None:
        return None
    version = parse_target_version(text)
    if version is None:
        raise UsageError(f"--target-version {text!r}: expected one of {', '.join(map(str, TARGET_VERSIONS))}")
    return version


def output_format(args: argparse.Namespace, resolver: Resolver, choices: tuple[str, ...]) -> str:
    """The command line's `--format`, then `TAPELINT_OUTPUT_FORMAT`, then the
    `output-format` of the configuration at the current directory, then text
    (ruff's order). Raises `UsageError`, `ConfigError`."""
    if args.format is not None:
        return args.format
    variable = os.environ.get(FORMAT_VARIABLE, "")
    if variable:
        if variable not in choices:
            raise UsageError(f"{FORMAT_VARIABLE}={variable!r}: expected one of {', '.join(choices)}")
        return variable
    configured = resolver.config_for(os.path.join(os.curdir, "-")).output_format
    if configured is not None and configured not in choices:
        raise UsageError(f"output-format {configured!r} is not available here: expected one of {', '.join(choices)}")
    return configured or "text"


def add_color(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--color", choices=COLOR_CHOICES, default=None,
                        help="colour the text output: auto (a terminal that is not TERM=dumb; NO_COLOR and "
                             "FORCE_COLOR are honoured), always or never")
    parser.add_argument("--no-color", dest="color", action="store_const", const="never", help="same as --color never")


def use_color(choice: str | None, stream: TextIO) -> bool:
    """`--color always|never` decides; otherwise (auto) `NO_COLOR`, then
    `FORCE_COLOR`, then a terminal whose `TERM` is not `dumb`."""
    if choice in ("always", "never"):
        return choice == "always"
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR", "0") not in ("", "0"):
        return True
    return os.environ.get("TERM") != "dumb" and stream.isatty()


def selectors(values: list[str]) -> tuple[Selector, ...]:
    found = []
    for text in split(values):
        selector = parse_selector(text)
        if selector is None:
            raise UsageError(f"unknown rule or prefix {text!r} (see `tapelint rules`)")
        found.append(selector)
    return tuple(found)


def _per_file_ignore(text: str) -> tuple[str, frozenset[str]]:
    glob, colon, rules = text.rpartition(":")
    if not colon or not glob.strip():
        raise UsageError(f"--extend-per-file-ignores {text!r}: expected GLOB:RULES, such as 'tests/*:TL003'")
    return glob.strip(), frozenset(code for selector in selectors([rules]) for code in selector.codes)


def split(values: list[str]) -> list[str]:
    return [part.strip() for value in values for part in value.split(",") if part.strip()]


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value



def positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError("must be more than 0")
    return value
