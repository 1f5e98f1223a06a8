"""`tapelint run` and `tapelint confirm`: the commands that execute user code.

Executing a program happens only here, only when asked, and always in the
engine's sandboxed subprocess (`tapelint_engine.runner.SANDBOX` says what it
does and does not isolate; `tapelint run --help` shows it). Notebooks are
not run: `run` refuses one and `confirm` reports each notebook with findings
as an error (exit 2), rather than judging nothing. The engine
needs numpy, an optional extra; without it these commands say so in one
line and exit 2, and the linter itself is unaffected.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from tapelint import __version__
from tapelint.confirm import Confirmation, confirm_file
from tapelint.diagnostics import Diagnostic, FileError, FileResult, Semantics
from tapelint.notebooks import is_notebook
from tapelint.options import add_paths, add_selection, add_semantics

STATUSES = ("confirmed", "refuted", "not-reached", "unsupported", "timeout")
NO_ENGINE = "the engine needs numpy: pip install -e '.[engine]' in a clone (or pip install numpy)"


def engine_available() -> bool:
    return importlib.util.find_spec("numpy") is not None


def configure_run(parser: argparse.ArgumentParser) -> None:
    from tapelint_engine.runner import SANDBOX  # no numpy needed for the text

    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = "In text mode the program's own output is shown as it runs, then the verdict.\n\n" + SANDBOX
    parser.add_argument("file", metavar="FILE", help="the program to execute")
    add_semantics(parser, default="torch")
    parser.add_argument("--backend", choices=("engine", "torch"), default="engine",
                        help="the numpy engine (default) or real PyTorch, when installed")
    parser.add_argument("--format", choices=("text", "json"), default="text")
    parser.add_argument("--timeout", type=float, default=30.0, metavar="SECONDS")
    parser.add_argument("--memory-mb", type=int, default=1024, metavar="MB")


def run_command(args: argparse.Namespace) -> int:
    """Execute one program on the engine and print what happened."""
    if not engine_available():
        print(f"tapelint: error: {NO_ENGINE}", file=sys.stderr)
        return 2
    from tapelint_engine.runner import main as engine_main

    return engine_main([args.file, "--semantics", args.semantics, "--backend", args.backend, "--format",
                        args.format, "--timeout", str(args.timeout), "--memory-mb", str(args.memory_mb)])


def configure_confirm(parser: argparse.ArgumentParser) -> None:
    add_paths(parser)
    add_semantics(parser)
    add_selection(parser)  # --jobs: files linted, and programs run, at once
    parser.add_argument("--format", choices=("text", "json"), default="text")
    parser.add_argument("--backend", choices=("auto", "engine", "torch"), default="auto",
                        help="auto (default): the numpy engine, then real PyTorch for an API the engine "
                             "lacks; engine; or torch (torch semantics only)")
    parser.add_argument("--timeout", type=float, default=30.0, metavar="SECONDS", help="per program (default: 30)")
    from tapelint.cli import add_cache_dir  # here: the CLI imports this module lazily

    add_cache_dir(parser)
    parser.add_argument("--no-cache", action="store_true",
                        help="neither read nor write the lint result cache (programs are always run)")


def confirm_command(args: argparse.Namespace) -> int:
    """Lint, run every file that has diagnostics, and judge each diagnostic."""
    from tapelint import options
    from tapelint.cache import ResultCache, disabled, run_cache_directory
    from tapelint.config import ConfigError
    from tapelint.files import discover
    from tapelint.runner import default_jobs, lint_files

    if not engine_available():
        print(f"tapelint: error: {NO_ENGINE}", file=sys.stderr)
        return 2
    try:
        resolver = options.resolver_from_args(args)
        discovery = discover(args.paths, resolver.excluder(named=tuple(args.paths)))
        per_file = [resolver.settings_for(path) for path in discovery.files]
    except ConfigError as exc:
        print(f"tapelint: error: {exc}", file=sys.stderr)
        return 2
    cache = None if disabled(args.no_cache) else ResultCache(run_cache_directory(args.cache_dir, resolver))
    run = lint_files(discovery.files, per_file, args.jobs or default_jobs(), cache)
    semantics = {result.path: settings.semantics for result, settings in zip(run.results, per_file)}
    found = [r for r in run.results if any(d.code != "TL900" for d in r.diagnostics)]
    todo = [r for r in found if not is_notebook(r.path)]
    refused = [FileError(r.path, "notebooks are not run by confirm; export the code cells to a script first"
                         " (`jupyter nbconvert --to script`)") for r in found if is_notebook(r.path)]

    def confirm(result: FileResult) -> list[tuple[Diagnostic, Confirmation]]:
        return confirm_file(result, semantics[result.path], timeout=args.timeout, backend=args.backend)

    with ThreadPoolExecutor(max_workers=args.jobs or default_jobs()) as pool:
        judged = [pair for pairs in pool.map(confirm, todo) for pair in pairs]
    errors = list(discovery.errors) + [e for r in run.results for e in r.errors] + refused
    profile = next(iter(semantics.values()), Semantics(args.semantics or "torch"))
    if args.format == "json":
        _print_json(judged, errors, profile, files_checked=len(run.results))
    else:
        _print_text(judged, errors, quiet=args.quiet)
    if errors or run.crashed:
        return 2
    return 1 if judged else 0


def _print_json(judged: list, errors: list, semantics: Semantics, files_checked: int) -> None:
    document: dict[str, Any] = {
        "version": __version__,
        "semantics": semantics.value,
        "files_checked": files_checked,
        "diagnostics": [{**d.to_json(), "confirmation": c.to_json()} for d, c in judged],
        "errors": [e.to_json() for e in errors],
    }
    json.dump(document, sys.stdout, indent=2)
    sys.stdout.write("\n")


def _print_text(judged: list, errors: list, quiet: bool) -> None:
    for diagnostic, confirmation in judged:
        start = diagnostic.range.start
        print(f"{diagnostic.path}:{start.line}:{start.column + 1}: {diagnostic.code} "
              f"[{confirmation.status}] {diagnostic.message}")
        print(f"    {_runtime_line(confirmation)}")
    for error in errors:
        print(f"{error.path}: error: {error.message}")
    if not quiet:
        counts = {status: sum(1 for _, c in judged if c.status == status) for status in STATUSES}
        parts = ", ".join(f"{n} {status}" for status, n in counts.items() if n)
        print(f"{len(judged)} diagnostic{'s' if len(judged) != 1 else ''} run: {parts or 'nothing to run'}.")


def _runtime_line(confirmation: Confirmation) -> str:
    runtime = confirmation.runtime
    where = ""
    if runtime.get("line") is not None:
        where = f" at line {runtime['line']}"
        if runtime.get("node_line") is not None:
            where += f" on the node created at line {runtime['node_line']}"
            if runtime.get("node_id") is not None:
                where += f" (NodeId({runtime['node_id']}))"
    error = (runtime.get("error") or "").split(" (or directly")[0].split(". Burn does not")[0]
    detail = f"; {runtime['detail']}" if runtime.get("detail") else ""
    decided = f"{confirmation.semantics} (run on PyTorch)" if runtime.get("backend") == "torch" \
        else confirmation.semantics
    if error:
        return f"{decided}: {error}{where}{detail}"
    return f"{decided}: ran to the end{detail}"
