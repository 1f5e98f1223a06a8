"""The `tapelint` command.

    tapelint check [PATH...]      lint files and directories (default: .)
    tapelint PATH...              the same: no subcommand means `check`
    tapelint rule CODE|NAME       a rule's documentation
    tapelint rules                every rule: code, name, summary
    tapelint explain [TEXT]       explain a pasted PyTorch or burn error (default: from stdin)
    tapelint lsp                  the language server, over stdio
    tapelint clean                remove the result cache (`tapelint.cache`)
    tapelint run FILE / confirm PATH...   execute on the engine (`tapelint.engine_commands`)

Exit codes (docs/output.md): 0 nothing found; 1 diagnostics reported, or a
file could not be read or a named path does not exist (it was not checked,
so the run is not clean); 2 usage error (bad option, unknown rule or
command, a bad `[tool.tapelint]` table or baseline file) or internal error
(tapelint failed on a file: reported as that file's `internal error`, the
other files are still checked; `--show-traceback` prints where, see
`tapelint.debug`). `--exit-zero` turns 1 into 0. Finding no
Python file at all is a warning, exit 0, as in ruff; so is a named path
that the exclusions skip.

Only what the command needs is imported: a subcommand's module (explain,
the engine commands) when it runs, the baseline and fixes when asked for, a
reporter when it prints. An editor piping a buffer to `check` pays for the
linter alone (tests/test_lazy_imports.py).
"""

from __future__ import annotations

import argparse
import difflib
import importlib
import json
import os
import sys
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TextIO

from tapelint import __version__, debug
from tapelint import rules as registry  # its rules load on first use: not in a run of cached results
from tapelint.config import ConfigError, Resolver
from tapelint.files import Discovery, SourceError, discover, read_source
from tapelint.notebooks import is_notebook
from tapelint.options import (
    UsageError,
    add_color,
    add_format,
    add_paths,
    add_selection,
    add_semantics,
    output_format,
    resolver_from_args,
    use_color,
)
from tapelint.reporters import FORMATS, REPORTERS, Report, ReportOptions
from tapelint.settings import Settings
from tapelint.stdin import StdinRun, is_stdin

if TYPE_CHECKING:
    from tapelint.rules.base import Rule

EXIT_CLEAN = 0
EXIT_FOUND = 1
EXIT_ERROR = 2
EXIT_INTERRUPTED = 130

# First words that are not commands but say what the user wanted.
_MEANT = {"server": "lsp", "serve": "lsp", "language-server": "lsp", "lint": "check",
          "version": "--version", "help": "--help"}


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
            parser.add_argument(debug.FLAG, action="store_true", help=debug.HELP)
            # Intermixed: `tapelint check a.py --format json b.py` means what it says.
            args = parser.parse_intermixed_args(args_list[1:])
            if args.show_traceback:
                debug.enable()
        except SystemExit as exc:  # --help, --version, or argparse's own usage error
            return exc.code if isinstance(exc.code, int) else EXIT_ERROR
        return command.handle(args)
    except (UsageError, ConfigError) as exc:
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
        print(f"tapelint: internal error: {debug.internal_error(exc)}", file=sys.stderr)
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
    if argv:
        _refuse_mistyped_command(argv[0])
    return ["check", *argv]


def _refuse_mistyped_command(word: str) -> None:
    """A first word that is no existing path but reads as a command is a
    typo, not a path to lint: say so rather than report a missing file."""
    if word.startswith("-") or "/" in word or "." in word or os.path.lexists(word):
        return
    close = [_MEANT[word]] if word in _MEANT else difflib.get_close_matches(word, list(COMMANDS), n=1)
    if close:
        raise UsageError(f"unknown command {word!r}; did you mean {close[0]!r}?")


def _lazy(module: str, name: str) -> Callable[..., Any]:
    """`module.name`, imported when first called: `tapelint check` never
    imports the other commands' modules."""

    def call(*args: Any) -> Any:
        return getattr(importlib.import_module(module), name)(*args)

    return call


# --- check --------------------------------------------------------------------


def add_lint_options(parser: argparse.ArgumentParser) -> None:
    """`tapelint check`'s options (those shared with `confirm` are in `tapelint.options`)."""
    add_paths(parser)
    add_format(parser, FORMATS)
    add_semantics(parser)
    add_selection(parser)
    add_color(parser)
    parser.add_argument("--output-file", "-o", metavar="FILE", help="write the report to FILE instead of stdout")
    parser.add_argument("--statistics", action="store_true",
                        help="print how many diagnostics each rule reported instead of the diagnostics (text or json)")
    parser.add_argument("--exit-zero", action="store_true",
                        help="exit 0 even when diagnostics are reported (usage and internal errors still exit 2)")
    parser.add_argument("--show-settings", action="store_true",
                        help="print the settings the first file would be checked with, and exit")
    parser.add_argument("--report-unused-suppressions", action="store_true", default=None,
                        help="report suppression comments that suppress nothing (TL901)")
    parser.add_argument("--baseline", metavar="FILE", help="report only findings not recorded in FILE")
    parser.add_argument("--write-baseline", metavar="FILE", help="record every current finding in FILE and exit")
    parser.add_argument("--stdin-filename", metavar="NAME",
                        help="with `-` as the path: the name to report standard input under (and find its "
                             "configuration and exclusions by)")
    parser.add_argument("--fix", action="store_true", help="apply safe fixes, then report what remains")
    parser.add_argument("--unsafe-fixes", action="store_true", default=None,
                        help="with --fix or --diff, apply unsafe fixes too (config: unsafe-fixes)")
    parser.add_argument("--no-unsafe-fixes", action="store_false", dest="unsafe_fixes", default=None,
                        help="never apply unsafe fixes, whatever the configuration says")
    parser.add_argument("--diff", action="store_true",
                        help="print the fixes as a unified diff instead of writing them (exit 1 if any)")
    parser.add_argument("--graph", metavar="DIR",
                        help="also draw each finding's abstract graph into DIR (DOT, and SVG with Graphviz)")
    add_cache_dir(parser)
    parser.add_argument("--no-cache", action="store_true", help="neither read nor write the result cache")


def add_cache_dir(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--cache-dir", metavar="DIR", default=None,
                        help="where results are cached (default: .tapelint_cache in the project root; "
                             "env TAPELINT_CACHE_DIR; config: cache-dir)")


def _check(args: argparse.Namespace) -> int:
    stdin = _stdin_name(args)
    resolver = resolver_from_args(args)
    excluder = resolver.excluder(named=(stdin,) if stdin is not None else tuple(args.paths))
    chosen_format = output_format(args, resolver, FORMATS)
    if args.statistics and chosen_format not in ("text", "json"):
        raise UsageError(f"--statistics prints text or json, not {chosen_format}")
    excluded = [(path, reason) for path in ((stdin,) if stdin is not None else args.paths)
                if (reason := excluder.excluded_by(path)) is not None]
    if stdin is not None:
        discovery = Discovery(() if excluded else (stdin,))
    else:
        discovery = discover(args.paths, excluder)
    per_file = [resolver.settings_for(path) for path in discovery.files]
    if args.show_settings:
        from tapelint.cache import disabled
        from tapelint.show_settings import show_settings

        shown = discovery.files[:1] or ([stdin] if stdin is not None else args.paths[:1])
        sys.stdout.write(show_settings(shown, resolver, excluder, chosen_format,
                                       args.cache_dir, disabled(args.no_cache)))
        return EXIT_CLEAN
    baseline = _load_baseline(args.baseline) if args.baseline else None
    stdin_run: StdinRun | None = None
    if stdin is not None:
        from tapelint.stdin import lint_stdin

        stdin_run = lint_stdin(sys.stdin.buffer, stdin, per_file[0]) if per_file else None
    if stdin_run is not None:
        run = stdin_run.run
    else:
        from tapelint.cache import ResultCache, disabled, run_cache_directory
        from tapelint.runner import RunResult, default_jobs, lint_files

        cache = None if disabled(args.no_cache) else ResultCache(run_cache_directory(args.cache_dir, resolver))
        jobs = args.jobs or default_jobs()
        run = lint_files(discovery.files, per_file, jobs, cache) if discovery.files else RunResult(())
    source_of = stdin_run.read_source if stdin_run else _source_or_none
    results = run.results
    unreadable = bool(discovery.errors)
    if args.write_baseline:
        from tapelint.baseline import BaselineError
        from tapelint.baseline import write as write_baseline

        try:
            count = write_baseline(args.write_baseline, results, source_of)
        except BaselineError as exc:
            raise UsageError(str(exc)) from None
        print(f"tapelint: recorded {count} finding(s) in {args.write_baseline}", file=sys.stderr)
        return _exit_code(args, found=unreadable, crashed=run.crashed)
    if stdin_run is not None and stdin_run.source is not None and (args.fix or args.diff):
        return _fix_stdin(args, stdin_run, per_file[0], chosen_format)
    fixed = None
    hidden = None
    if args.fix or args.diff:
        from tapelint.fixes import fix_files, hidden_fixes, write_diff

        results, fixed = fix_files(results, per_file, write=not args.diff)
        hidden = hidden_fixes(results, per_file)
        if args.diff:
            write_diff(fixed, sys.stdout, sys.stderr, hidden)
            return _exit_code(args, found=unreadable or bool(fixed.changed or fixed.errors), crashed=run.crashed)
    if baseline is not None:
        results, stale = baseline.filter(results, source_of)
        if stale and not args.quiet:
            print(f"tapelint: {stale} baseline entr{'y' if stale == 1 else 'ies'} matched nothing"
                  " (fixed or edited); refresh with --write-baseline", file=sys.stderr)
    # The run's headline semantics: the configuration at the current directory's.
    semantics = resolver.settings_for(os.path.join(os.curdir, "-")).semantics
    report = Report(__version__, semantics, results, discovery.errors)
    if not args.quiet:
        for path, reason in excluded:
            print(f"tapelint: warning: {path} is excluded by {reason}; not checked", file=sys.stderr)
        unexcluded = [path for path in args.paths if all(path != named for named, _ in excluded)]
        if not discovery.files and not discovery.errors and unexcluded and stdin is None:
            print(f"tapelint: warning: no Python files found under {', '.join(unexcluded)}", file=sys.stderr)
        _warn_directives(results)
    with ExitStack() as stack:
        out = _output(args.output_file, stack)
        read_source = stdin_run.read_source if stdin_run else _module_source
        options = ReportOptions(color=use_color(args.color, out), quiet=args.quiet, read_source=read_source)
        if args.statistics:
            from tapelint.statistics import write_statistics

            write_statistics(report.diagnostics, chosen_format, out)
        elif discovery.files or discovery.errors or chosen_format != "text":
            REPORTERS[chosen_format](report, out, options)
        if fixed is not None and not args.quiet:
            from tapelint.fixes import summary as fix_summary

            print(fix_summary(fixed, hidden), file=out if chosen_format == "text" else sys.stderr)
        out.flush()
    if args.graph:
        _draw_static(results, args.graph, source_of, resolver)
    return _exit_code(args, found=bool(report.diagnostics or report.errors), crashed=run.crashed)


def _draw_static(results: Sequence[Any], directory: str, source_of: Callable[[str], str | None],
                 resolver: Resolver) -> None:
    from tapelint.graph import GraphError, write_static_graphs

    try:
        messages = write_static_graphs(results, directory, source_of, resolver.settings_for)
    except (GraphError, OSError) as exc:
        raise UsageError(f"--graph {directory}: {exc}") from None
    for message in messages or [f"no finding to draw into {directory}"]:
        print(f"tapelint: {message}", file=sys.stderr)


def _exit_code(args: argparse.Namespace, found: bool, crashed: bool) -> int:
    if crashed:
        return EXIT_ERROR
    return EXIT_FOUND if found and not args.exit_zero else EXIT_CLEAN


def _load_baseline(path: str) -> Any:
    from tapelint.baseline import BaselineError
    from tapelint.baseline import load as load_baseline

    try:
        return load_baseline(path)
    except BaselineError as exc:
        raise UsageError(str(exc)) from None


def _output(path: str | None, stack: ExitStack) -> TextIO:
    """Standard output, or the `--output-file` (its directory created)."""
    if path is None:
        return sys.stdout
    try:
        if os.path.dirname(path):
            os.makedirs(os.path.dirname(path), exist_ok=True)
        return stack.enter_context(open(path, "w", encoding="utf-8"))
    except OSError as exc:
        raise UsageError(f"cannot write --output-file {path}: {exc.strerror or exc}") from None


def _warn_directives(results: Sequence[Any]) -> None:
    """Invalid suppression comments, on stderr as ruff does: they suppress
    nothing, so the user must hear about them whatever the rules selected."""
    from tapelint.reporters.text import location

    for result in results:
        for warning in result.warnings:
            print(f"tapelint: warning: {location(warning.path, warning.position)}: {warning.message}", file=sys.stderr)


def _fix_stdin(args: argparse.Namespace, stdin_run: StdinRun, settings: Settings, chosen_format: str) -> int:
    """`--fix -` prints the fixed source on stdout (what remains is reported
    on stderr); `--diff -` prints the diff: ruff's behaviour, for editors and
    formatter pipelines."""
    from tapelint.fixes import fix_source, hidden_fixes, unified_diff

    source = stdin_run.source or ""
    fixed, count, result = fix_source(source, stdin_run.name, settings)
    hidden = hidden_fixes((result,), (settings,))
    plural = f"{count} diagnostic{'' if count == 1 else 's'}{hidden.more_with_unsafe()}"
    if args.diff:
        sys.stdout.write(unified_diff(stdin_run.name, source, fixed))
        print(f"Would fix {plural}", file=sys.stderr)
        return _exit_code(args, found=fixed != source, crashed=False)
    sys.stdout.flush()
    sys.stdout.buffer.write(fixed.encode(stdin_run.encoding))
    sys.stdout.buffer.flush()
    semantics = settings.semantics
    report = Report(__version__, semantics, (result,), ())
    if result.diagnostics or result.errors:
        options = ReportOptions(color=False, quiet=True, read_source=lambda path: fixed if path == stdin_run.name
                                else None)
        REPORTERS[chosen_format](report, sys.stderr, options)
    if not args.quiet:
        print(f"Fixed {plural}", file=sys.stderr)
    return _exit_code(args, found=bool(result.diagnostics or result.errors), crashed=False)


def _stdin_name(args: argparse.Namespace) -> str | None:
    """The name standard input is reported under, when `-` is the path."""
    if not is_stdin(args.paths):
        if args.stdin_filename is not None or "-" in args.paths:
            raise UsageError("standard input is read with `-` as the only path (with --stdin-filename NAME)")
        return None
    return args.stdin_filename or "-"


def _source_or_none(path: str) -> str | None:
    try:
        return read_source(path)
    except SourceError:
        return None


def _module_source(path: str) -> str | None:
    """Source lines for the reporters, which index a file's lines: a
    notebook's positions are cell lines, so it shows none."""
    return None if is_notebook(path) else _source_or_none(path)


# --- rule, rules ----------------------------------------------------------------


def _configure_rule(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("rule", metavar="CODE|NAME", help="a rule code (TL001) or name (hoisted-tracked-tensor)")
    parser.add_argument("--format", choices=("text", "json"), default="text")


def _rule(args: argparse.Namespace) -> int:
    rule = registry.resolve(args.rule)
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
        _print_json([_rule_json(rule) for rule in registry.ALL_RULES])
        return EXIT_CLEAN
    width = max(len(rule.name) for rule in registry.ALL_RULES)
    for rule in registry.ALL_RULES:
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


# --- clean ------------------------------------------------------------------------


def _configure_clean(parser: argparse.ArgumentParser) -> None:
    add_cache_dir(parser)
    parser.add_argument("--config", metavar="PATH", help="the pyproject.toml whose cache-dir to clean")
    parser.add_argument("--isolated", action="store_true", help="ignore every configuration file")


def _clean(args: argparse.Namespace) -> int:
    from tapelint.cache import clean, run_cache_directory
    from tapelint.config import Resolver

    directory = run_cache_directory(args.cache_dir, Resolver(config_file=args.config, isolated=args.isolated))
    try:
        removed = clean(directory)
    except OSError as exc:
        raise UsageError(f"cannot clean the cache: {exc}") from None
    print(f"tapelint: {'removed' if removed else 'no cache at'} {directory}", file=sys.stderr)
    return EXIT_CLEAN


# --- lsp --------------------------------------------------------------------------


def _configure_lsp(parser: argparse.ArgumentParser) -> None:
    """No options: an editor starts `tapelint lsp` and talks LSP over stdio."""


def _lsp(args: argparse.Namespace) -> int:
    try:
        from tapelint.lsp.server import main as serve  # pygls is an optional extra
    except ModuleNotFoundError as exc:
        if exc.name not in ("pygls", "lsprotocol"):
            raise
        raise UsageError(f"the language server needs pygls: {INSTALL_LSP}") from None
    return serve()


# Extras are installed from the repository (tapelint is not on PyPI).
INSTALL_LSP = "pip install -e '.[lsp]' in a clone, or pip install 'tapelint[lsp] @ git+https://<host>/<repository>.git'"

COMMANDS: dict[str, Command] = {
    "check": Command("lint files and directories", add_lint_options, _check),
    "rule": Command("show a rule's documentation", _configure_rule, _rule),
    "rules": Command("list every rule", _configure_rules, _rules),
    "explain": Command("explain a pasted PyTorch or burn error (or traceback)",
                       _lazy("tapelint.explain", "configure"), _lazy("tapelint.explain", "run")),
    "clean": Command("remove the result cache", _configure_clean, _clean),
    "lsp": Command("run the language server over stdio (needs the lsp extra)", _configure_lsp, _lsp),
    "run": Command("execute a program on the engine and report graph reuse (needs the engine extra)",
                   _lazy("tapelint.graph_commands", "configure_run"), _lazy("tapelint.graph_commands", "run_command")),
    "confirm": Command("lint, then prove each diagnostic by running the program (needs the engine extra)",
                       _lazy("tapelint.graph_commands", "configure_confirm"),
                       _lazy("tapelint.graph_commands", "confirm_command")),
}
