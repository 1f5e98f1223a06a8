"""`tapelint run FILE --graph out.svg` and `tapelint confirm --graph DIR`:
the engine commands as they are (`tapelint.engine_commands`), then a picture
of the graph at the failing backward (`tapelint.graph`).

The picture comes from a second run of the program, recording the graph
(`tapelint_engine.graph`): the engine is deterministic, so it is the run
just reported. The command's exit code is the engine command's.
"""

from __future__ import annotations

import argparse
import os
import sys

from tapelint import engine_commands
from tapelint.graph import GraphError, runtime_dot, safe_name, target, write


def configure_run(parser: argparse.ArgumentParser) -> None:
    engine_commands.configure_run(parser)
    parser.add_argument("--graph", metavar="OUT",
                        help="draw the graph at the failing backward: OUT.dot always, OUT.svg/.png with Graphviz")


def configure_confirm(parser: argparse.ArgumentParser) -> None:
    engine_commands.configure_confirm(parser)
    parser.add_argument("--graph", metavar="DIR",
                        help="draw each failing program's graph at its failing backward into DIR")


def run_command(args: argparse.Namespace) -> int:
    if args.graph is not None:
        try:
            base, formats = target(args.graph)
        except GraphError as exc:
            print(f"tapelint: error: {exc}", file=sys.stderr)
            return 2
    code = engine_commands.run_command(args)
    if args.graph is not None and engine_commands.engine_available() and os.path.isfile(args.file):
        _draw(args.file, args.semantics, args.timeout, args.memory_mb, base, formats)
    return code


def confirm_command(args: argparse.Namespace) -> int:
    code = engine_commands.confirm_command(args)
    if args.graph is None or not engine_commands.engine_available():
        return code
    from tapelint.files import discover
    from tapelint.options import resolver_from_args

    resolver = resolver_from_args(args)
    for path in discover(args.paths, resolver.excluder(named=tuple(args.paths))).files:
        if path.endswith(".py"):
            semantics = resolver.settings_for(path).semantics.value
            _draw(path, semantics, args.timeout, None, os.path.join(args.graph, safe_name(path)), ("svg",),
                  quiet=True)
    return code


def _draw(path: str, semantics: str, timeout: float, memory_mb: int | None, base: str, formats: tuple[str, ...],
          quiet: bool = False) -> None:
    """Record and write one program's graph under the command's limits (None:
    the default memory limit, as `confirm` runs have); say so on stderr."""
    from tapelint_engine.graph import record_graph

    record = record_graph(path, semantics, timeout=timeout, memory_mb=memory_mb)
    if record.get("status") != "error":
        if not quiet:
            print(f"tapelint: no graph for {path}: no backward failed ({record.get('status')})", file=sys.stderr)
        return
    title = f"{path}: {record.get('kind')} at line {record.get('line')} ({semantics})"
    try:
        print(f"tapelint: {write(runtime_dot(record, title), base, formats)}", file=sys.stderr)
    except (GraphError, OSError) as exc:
        print(f"tapelint: error: cannot draw the graph of {path}: {exc}", file=sys.stderr)
