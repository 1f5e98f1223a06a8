"""`--show-settings`: the settings a file would be checked with, and where
they came from, so a user can see why a rule did or did not run."""

from __future__ import annotations

import os
from collections.abc import Sequence

from tapelint.cache import run_cache_directory
from tapelint.config import Config, ConfigExcluder, Resolver
from tapelint.settings import RUNNING, PythonVersion


def show_settings(paths: Sequence[str], resolver: Resolver, excluder: ConfigExcluder, output_format: str,
                  cache_dir: str | None = None, no_cache: bool = False) -> str:
    """`cache_dir` and `no_cache`: the `--cache-dir` and `--no-cache` flags."""
    path = paths[0]
    config = resolver.config_for(path if os.path.isfile(path) else os.path.join(path, "-"))
    settings = resolver.settings_for(path)
    overrides = resolver.overrides
    source = "none (--isolated)" if resolver.isolated else (config.path or "none (defaults)")
    excluded = excluder.excluded_by(path)
    rows = [
        ("file", path),
        ("configuration", source),
        ("semantics", settings.semantics.value),
        ("target-version", _target_version(settings.target_version, config, resolver)),
        ("enabled rules", ", ".join(sorted(c for c in settings.select or () if settings.enabled(c)))),
        ("ignored here (per-file)", ", ".join(sorted(settings.ignore)) or "-"),
        ("exclude", _globs(config.exclude) if config.exclude is not None else "the built-in list"),
        ("extend-exclude", _globs(config.extend_exclude + overrides.exclude)),
        ("excluded", excluded or "no"),
        ("force-exclude", _flag(overrides.force_exclude)),
        ("respect-gitignore", _flag(overrides.respect_gitignore)),
        ("output-format", output_format),
        ("unsafe-fixes", _flag(settings.unsafe_fixes)),
        ("report-unused-suppressions", _flag(settings.report_unused_suppressions)),
        ("backward-functions", _globs(settings.backward_functions)),
        ("tracked-functions", _globs(settings.tracked_functions)),
        ("cache-dir", "none (--no-cache)" if no_cache else run_cache_directory(cache_dir, resolver)),
    ]
    width = max(len(name) for name, _ in rows)
    return "".join(f"{name.ljust(width)}  {value}\n" for name, value in rows)


def _target_version(version: PythonVersion, config: Config, resolver: Resolver) -> str:
    """The version, where it came from, and who judges syntax because of it."""
    requires = config.requires_python
    if resolver.overrides.target_version is not None:
        origin = "--target-version"
    elif config.target_version is not None:
        origin = f"target-version in {config.path}"
    elif requires is not None and requires.lower_bound is not None:
        origin = f"requires-python {requires.text!r} in {requires.path}"
    elif requires is not None:
        origin = f"the running Python; requires-python {requires.text!r} in {requires.path} gives no lower bound"
    else:
        origin = "the running Python"
    running = f"this Python {RUNNING.dotted}"
    if version > RUNNING:
        judge = f"newer than {running}: libcst's parser judges the syntax it refuses"
    else:
        judge = f"{running} judges syntax"
    return f"{version} ({origin}; {judge})"


def _globs(values: Sequence[str]) -> str:
    return ", ".join(values) if values else "-"


def _flag(value: bool) -> str:
    return "true" if value else "false"
