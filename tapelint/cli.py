"""The `tapelint` command.

    tapelint check [PATH...]      lint files and directories (default: .)
    tapelint PATH...              the same: no subcommand means `check`
    tapelint rule CODE|NAME       a rule's documentation
    tapelint rules                every rule: code, name, summary
    tapelint explain [TEXT]       explain a pasted PyTorch or burn error (default: from stdin)
    tapelint lsp                  the language server, over stdio

Exit codes (`rules.md`): 0 nothing found; 1 diagnostics reported, or a file
could not be read (it was not checked, so the run is not clean); 2 usage
error (bad option, unknown rule, a named path that does not exist, a bad
`[tool.tapelint]` table or baseline file) or
internal error (tapelint failed on a file: reported as that file's
`internal error`, the other files are still checked). Finding no Python
file at all is a warning, exit 0, as in ruff.

Subcommands live in `COMMANDS`; `run` and `confirm` execute user code on the
engine (`tapelint.engine_commands`), and only they do.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import dataclass
from typing import Callable, Sequence, TextIO

from tapelint import __version__, engine_commands, explain
from tapelint.diagnostics import Semantics
from tapelint.baseline import BaselineError
from tapelint.baseline import load as load_baseline
from tapelint.baseline import write as write_baseline
from tapelint.config import ConfigError, Overrides, Resolver, Selection, Selector, parse_selector
from tapelint.files import Discovery, SourceError, discover, read_source
from tapelint.fixes import fix_files, write_diff
from tapelint.fixes import summary as fix_summary
from tapelint.notebooks import is_notebook
from tapelint.reporters import REPORTERS, Report, ReportOptions
from tapelint.rules import ALL_RULES, resolve
from tapelint.rules.base import Rule
from tapelint.runner import default_jobs, lint_files
from tapelint.stdin import StdinRun, is_stdin, lint_stdin

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
    return ["check", *argv]


# --- check --------------------------------------------------------------------


def add_lint_options(parser: argparse.ArgumentParser) -> None:
    """Options shared by every command that lints (check, and later run/confirm)."""
    parser.add_argument("paths", nargs="*", metavar="PATH", default=["."], help="files or directories (default: .)")
    parser.add_argument("--format", choices=sorted(REPORTERS), default="text", help="output format (default: text)")
    parser.add_argument(
        "--semantics",
        choices=[s.value for s in Semantics],
        default=None,
        help="judge against PyTorch (default) or a strict tape that rejects every reuse",
    )
    parser.add_argument("--select", action="append", default=[], metavar="RULES",
                        help="only these rules: comma-separated codes, code prefixes (TL00) or names")
    parser.add_argument("--extend-select", action="append", default=[], metavar="RULES",
                        help="also these rules (same forms as --select)")
    parser.add_argument("--ignore", action="append", default=[], metavar="RULES",
                        help="skip these rules (same forms as --select)")
    parser.add_argument("--config", metavar="PATH", help="use this pyproject.toml's [tool.tapelint] for every file")
    parser.add_argument("--isolated", action="store_true", help="ignore every configuration file")
    parser.add_argument("--report-unused-suppressions", action="store_true", default=None,
                        help="report suppression comments that suppress nothing (TL901)")
    parser.add_argument("--baseline", metavar="FILE", help="report only findings not recorded in FILE")
    parser.add_argument("--write-baseline", metavar="FILE", help="record every current finding in FILE and exit")
    parser.add_argument("--exclude", action="append", default=[], metavar="GLOB",
                        help="skip matching files and directories (repeatable, or comma-separated)")
    parser.add_argument("--jobs", "-j", type=_positive_int, default=None, metavar="N",
                        help="worker processes (default: one per core)")
    parser.add_argument("--file-timeout", type=_positive_float, default=None, metavar="SECONDS",
                        help="CPU seconds one file may take (default: 120; config: file-timeout)")
    parser.add_argument("--file-memory-mb", type=_positive_int, default=None, metavar="MB",
                        help="memory one file may take (default: 4096; config: file-memory-mb)")
    parser.add_argument("--quiet", "-q", action="store_true", help="print diagnostics and errors only, no summary")
    parser.add_argument("--no-color", action="store_true", help="never colour the output (also: NO_COLOR=1)")
    parser.add_argument("--stdin-filename", metavar="NAME",
                        help="with `-` as the path: the name to report standard input under (and find its configuration by)")
    parser.add_argument("--fix", action="store_true", help="apply safe fixes, then report what remains")
    parser.add_argument("--unsafe-fixes", action="store_true", default=None,
                        help="with --fix or --diff, apply unsafe fixes too (config: unsafe-fixes)")
    parser.add_argument("--no-unsafe-fixes", action="store_false", dest="unsafe_fixes", default=None,
                        help="never apply unsafe fixes, whatever the configuration says")
    parser.add_argument("--diff", action="store_true",
                        help="print the fixes as a unified diff instead of writing them (exit 1 if any)")


def resolver_from_args(args: argparse.Namespace) -> Resolver:
    """Settings per file: the nearest `[tool.tapelint]` under the command line
    (see `tapelint.config`). Raises `ConfigError`."""
    overrides = Overrides(
        selection=Selection(
            select=_selectors(args.select) if args.select else None,
            extend_select=_selectors(args.extend_select),
            ignore=_selectors(args.ignore),
        ),
        exclude=tuple(_split(args.exclude)),
        semantics=Semantics(args.semantics) if args.semantics else None,
        unsafe_fixes=getattr(args, "unsafe_fixes", None),
        report_unused_suppressions=args.report_unused_suppressions,
        file_timeout=getattr(args, "file_timeout", None),
        file_memory_mb=getattr(args, "file_memory_mb", None),
    )
    return Resolver(overrides, config_file=args.config, isolated=args.isolated)


def _check(args: argparse.Namespace) -> int:
    stdin = _stdin_name(args)
    try:
        resolver = resolver_from_args(args)
        discovery = Discovery((stdin,)) if stdin is not None else discover(args.paths, resolver.excluder())
        per_file = [resolver.settings_for(path) for path in discovery.files]
        baseline = load_baseline(args.baseline) if args.baseline else None
    except (ConfigError, BaselineError) as exc:
        raise UsageError(str(exc)) from None
    stdin_run: StdinRun | None = None
    if stdin is not None:
        stdin_run = lint_stdin(sys.stdin.buffer, stdin, per_file[0])
        run = stdin_run.run
    else:
        run = lint_files(discovery.files, per_file, args.jobs or default_jobs())
    source_of = stdin_run.read_source if stdin_run else _source_or_none
    results = run.results
    if args.write_baseline:
        try:
            count = write_baseline(args.write_baseline, results, source_of)
        except BaselineError as exc:
            raise UsageError(str(exc)) from None
        print(f"tapelint: recorded {count} finding(s) in {args.write_baseline}", file=sys.stderr)
        return EXIT_ERROR if discovery.errors or run.crashed else EXIT_CLEAN
    fixed = None
    if args.fix or args.diff:
        results, fixed = fix_files(results, per_file, write=not args.diff)
        if args.diff:
            write_diff(fixed, sys.stdout, sys.stderr)
            if discovery.errors or run.crashed:
                return EXIT_ERROR
            return EXIT_FOUND if fixed.changed or fixed.errors else EXIT_CLEAN
    if baseline is not None:
        results, stale = baseline.filter(results, source_of)
        if stale and not args.quiet:
            print(f"tapelint: {stale} baseline entr{'y' if stale == 1 else 'ies'} matched nothing"
                  " (fixed or edited); refresh with --write-baseline", file=sys.stderr)
    # The run's headline semantics: the configuration at the current directory's.
    semantics = resolver.settings_for(os.path.join(os.curdir, "-")).semantics
    report = Report(__version__, semantics, results, discovery.errors)
    read_source = stdin_run.read_source if stdin_run else _module_source
    options = ReportOptions(color=_use_color(args, sys.stdout), quiet=args.quiet, read_source=read_source)
    if not discovery.files and not discovery.errors and not args.quiet:
        print(f"tapelint: warning: no Python files found under {', '.join(args.paths)}", file=sys.stderr)
    if discovery.files or discovery.errors or args.format != "text":
        REPORTERS[args.format](report, sys.stdout, options)
    if fixed is not None and not args.quiet:
        print(fix_summary(fixed), file=sys.stdout if args.format == "text" else sys.stderr)
    sys.stdout.flush()
    if discovery.errors or run.crashed:
        return EXIT_ERROR
    return EXIT_FOUND if report.diagnostics or report.errors else EXIT_CLEAN


def _stdin_name(args: argparse.Namespace) -> str | None:
    """The name standard input is reported under, when `-` is the path."""
    if not is_stdin(args.paths):
        if args.stdin_filename is not None or "-" in args.paths:
            raise UsageError("standard input is read with `-` as the only path (with --stdin-filename NAME)")
        return None
    if args.fix or args.diff:
        raise UsageError("--fix and --diff do not read standard input; name the files")
    return args.stdin_filename or "-"


def _selectors(values: list[str]) -> tuple[Selector, ...]:
    selectors = []
    for text in _split(values):
        selector = parse_selector(text)
        if selector is None:
            raise UsageError(f"unknown rule or prefix {text!r} (see `tapelint rules`)")
        selectors.append(selector)
    return tuple(selectors)


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


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError("must be more than 0")
    return value


def _source_or_none(path: str) -> str | None:
    try:
        return read_source(path)
    except SourceError:
        return None


def _module_source(path: str) -> str | None:
    """Source lines for the reporters, which index a file's lines: a
    notebook's positions are cell lines, so it shows none."""
    return None if is_notebook(path) else _source_or_none(path)


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


# --- lsp --------------------------------------------------------------------------


def _configure_lsp(parser: argparse.ArgumentParser) -> None:
    """No options: an editor starts `tapelint lsp` and talks LSP over stdio."""


def _lsp(args: argparse.Namespace) -> int:
    try:
        from tapelint.lsp.server import main as serve  # pygls is an optional extra
    except ModuleNotFoundError as exc:
        if exc.name not in ("pygls", "lsprotocol"):
            raise
        raise UsageError("the language server needs pygls: pip install 'tapelint[lsp]'") from None
    return serve()


COMMANDS: dict[str, Command] = {
    "check": Command("lint files and directories", add_lint_options, _check),
    "rule": Command("show a rule's documentation", _configure_rule, _rule),
    "rules": Command("list every rule", _configure_rules, _rules),
    "explain": Command("explain a pasted PyTorch or burn error (or traceback)", explain.configure, explain.run),
    "lsp": Command("run the language server over stdio (needs tapelint[lsp])", _configure_lsp, _lsp),
    "run": Command("execute a program on the engine and report graph reuse (needs tapelint[engine])",
                   engine_commands.configure_run, engine_commands.run_command),
    "confirm": Command("lint, then prove each diagnostic by running the program (needs tapelint[engine])",
                       engine_commands.configure_confirm, engine_commands.confirm_command),
}
