"""The `tapelint` command.

    tapelint check [PATH...]      lint files and directories (default: .)
    tapelint PATH...              the same: no subcommand means `check`
    tapelint rule CODE|NAME       a rule's documentation
    tapelint rules                every rule: code, name, summary

Exit codes (`rules.md`): 0 nothing found; 1 diagnostics reported, or a file
could not be read (it was not checked, so the run is not clean); 2 usage
error (bad option, unknown rule, a named path that does not exist) or
internal error (tapelint failed on a file: reported as that file's
`internal error`, the other files are still checked). Finding no Python
file at all is a warning, exit 0, as in ruff.

Subcommands live in `COMMANDS`; `run` and `confirm` are reserved for the
engine and answer with a usage error until they are registered there.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import dataclass
from typing import Callable, Sequence, TextIO

from tapelint import __version__
from tapelint.diagnostics import Semantics
from tapelint.files import Excluder, SourceError, discover, read_source
from tapelint.reporters import REPORTERS, Report, ReportOptions
from tapelint.rules import ALL_RULES, resolve
from tapelint.rules.base import Rule
from tapelint.rules.tl900_parse_error import ParseError
from tapelint.runner import default_jobs, lint_files
from tapelint.settings import Settings

EXIT_CLEAN = 0
EXIT_FOUND = 1
EXIT_ERROR = 2
EXIT_INTERRUPTED = 130


class UsageError(Exception):
    """A bad command line: reported as `tapelint: error: ...`, exit 2."""


@dataclass(frozen=True)
class Command:
    help: str
    configure: Callable[[argparse.ArgumentParser], None]
    handle: Callable[[argparse.Namespace], int]


def main(argv: Sequence[str] | None = None) -> int:
    _make_output_safe()
    try:
        args_list = _with_default_command(list(sys.argv[1:] if argv is None else argv))
        try:
            if args_list[0] not in COMMANDS:  # -h / --version
                build_parser().parse_args(args_list)
            name, command = args_list[0], COMMANDS[args_list[0]]
            parser = argparse.ArgumentParser(prog=f"tapelint {name}", description=command.help)
            command.configure(parser)
            # Intermixed: `tapelint check a.py --format json b.py` means what it says.
            args = parser.parse_intermixed_args(args_list[1:])
        except SystemExit as exc:  # --help, --version, or argparse's own usage error
            return exc.code if isinstance(exc.code, int) else EXIT_ERROR
        return command.handle(args)
    except UsageError as exc:
        print(f"tapelint: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("tapelint: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader went away (`tapelint check | head`): stop quietly.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_FOUND
    except Exception as exc:  # never a traceback: one line, exit 2
        print(f"tapelint: internal error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return EXIT_ERROR


def build_parser() -> argparse.ArgumentParser:
    """The top-level parser: `--help` (listing the commands) and `--version`."""
    parser = argparse.ArgumentParser(
        prog="tapelint",
        description="Find double-backward and graph-retention hazards in PyTorch code.",
        epilog="With no command, `tapelint PATH...` means `tapelint check PATH...`.",
    )
    parser.add_argument("--version", action="version", version=f"tapelint {__version__}")
    commands = parser.add_subparsers(metavar="COMMAND")
    for name, command in COMMANDS.items():
        commands.add_parser(name, help=command.help)
    return parser


def _with_default_command(argv: list[str]) -> list[str]:
    if argv and (argv[0] in COMMANDS or argv[0] in ("-h", "--help", "--version")):
        return argv
    if argv and argv[0] in RESERVED:
        raise UsageError(f"`tapelint {argv[0]}` is not available in this version")
    return ["check", *argv]


# --- check --------------------------------------------------------------------


def add_lint_options(parser: argparse.ArgumentParser) -> None:
    """Options shared by every command that lints (check, and later run/confirm)."""
    parser.add_argument("paths", nargs="*", metavar="PATH", default=["."], help="files or directories (default: .)")
    parser.add_argument("--format", choices=sorted(REPORTERS), default="text", help="output format (default: text)")
    parser.add_argument(
        "--semantics",
        choices=[s.value for s in Semantics],
        default=Semantics.TORCH.value,
        help="judge against PyTorch (default) or a strict tape that rejects every reuse",
    )
    parser.add_argument("--select", action="append", default=[], metavar="RULES",
                        help="only these rules: comma-separated codes, code prefixes (TL00) or names")
    parser.add_argument("--ignore", action="append", default=[], metavar="RULES",
                        help="skip these rules (same forms as --select)")
    parser.add_argument("--exclude", action="append", default=[], metavar="GLOB",
                        help="skip matching files and directories (repeatable, or comma-separated)")
    parser.add_argument("--jobs", "-j", type=_positive_int, default=None, metavar="N",
                        help="worker processes (default: one per core)")
    parser.add_argument("--quiet", "-q", action="store_true", help="print diagnostics and errors only, no summary")
    parser.add_argument("--no-color", action="store_true", help="never colour the output (also: NO_COLOR=1)")


def settings_from_args(args: argparse.Namespace) -> Settings:
    select = _selected_codes(args.select) if args.select else None
    ignore = _selected_codes(args.ignore) if args.ignore else frozenset()
    if select is not None and ParseError.code not in ignore:
        # A file that cannot be parsed is never silently passed, whatever is
        # selected (as in ruff); `--ignore TL900` is the way to silence it.
        select = select | {ParseError.code}
    return Settings(semantics=Semantics(args.semantics), select=select, ignore=ignore)


def _check(args: argparse.Namespace) -> int:
    settings = settings_from_args(args)
    excluder = Excluder(tuple(_split(args.exclude)))
    discovery = discover(args.paths, excluder)
    run = lint_files(discovery.files, settings, args.jobs or default_jobs())
    report = Report(__version__, settings.semantics, run.results, discovery.errors)
    options = ReportOptions(color=_use_color(args, sys.stdout), quiet=args.quiet, read_source=_source_or_none)
    if not discovery.files and not discovery.errors and not args.quiet:
        print(f"tapelint: warning: no Python files found under {', '.join(args.paths)}", file=sys.stderr)
    if discovery.files or discovery.errors or args.format != "text":
        REPORTERS[args.format](report, sys.stdout, options)
    sys.stdout.flush()
    if discovery.errors or run.crashed:
        return EXIT_ERROR
    return EXIT_FOUND if report.diagnostics or report.errors else EXIT_CLEAN


def _selected_codes(values: list[str]) -> frozenset[str]:
    codes: set[str] = set()
    for selector in _split(values):
        rule = resolve(selector)
        prefix = selector.upper()
        matching = [rule.code] if rule else [r.code for r in ALL_RULES if prefix == "ALL" or r.code.startswith(prefix)]
        if not matching:
            raise UsageError(f"unknown rule or prefix {selector!r} (see `tapelint rules`)")
        codes.update(matching)
    return frozenset(codes)


def _split(values: list[str]) -> list[str]:
    return [part.strip() for value in values for part in value.split(",") if part.strip()]


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def _source_or_none(path: str) -> str | None:
    try:
        return read_source(path)
    except SourceError:
        return None


def _use_color(args: argparse.Namespace, stream: TextIO) -> bool:
    """--no-color, then NO_COLOR, then FORCE_COLOR, then: is it a terminal?"""
    if args.no_color or os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR", "0") not in ("", "0"):
        return True
    return stream.isatty()


# --- rule, rules ----------------------------------------------------------------


def _configure_rule(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("rule", metavar="CODE|NAME", help="a rule code (TL001) or name (hoisted-tracked-tensor)")
    parser.add_argument("--format", choices=("text", "json"), default="text")


def _rule(args: argparse.Namespace) -> int:
    rule = resolve(args.rule)
    if rule is None:
        raise UsageError(f"unknown rule {args.rule!r} (see `tapelint rules`)")
    if args.format == "json":
        _print_json({**_rule_json(rule), "documentation": rule.documentation()})
    else:
        sys.stdout.write(rule.documentation())
    return EXIT_CLEAN


def _configure_rules(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--format", choices=("text", "json"), default="text")


def _rules(args: argparse.Namespace) -> int:
    if args.format == "json":
        _print_json([_rule_json(rule) for rule in ALL_RULES])
        return EXIT_CLEAN
    width = max(len(rule.name) for rule in ALL_RULES)
    for rule in ALL_RULES:
        print(f"{rule.code}  {rule.name.ljust(width)}  {rule.summary}")
    return EXIT_CLEAN


def _rule_json(rule: type[Rule]) -> dict[str, str]:
    return {"code": rule.code, "name": rule.name, "summary": rule.summary}


def _print_json(document: object) -> None:
    json.dump(document, sys.stdout, indent=2)
    sys.stdout.write("\n")


def _make_output_safe() -> None:
    """A path or source line the terminal's encoding cannot show is escaped,
    not a crash."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="backslashreplace")


COMMANDS: dict[str, Command] = {
    "check": Command("lint files and directories", add_lint_options, _check),
    "rule": Command("show a rule's documentation", _configure_rule, _rule),
    "rules": Command("list every rule", _configure_rules, _rules),
}
# Subcommands the engine will add (`tapelint run`, `tapelint confirm`).
RESERVED = frozenset({"run", "confirm"})
