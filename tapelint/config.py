"""`[tool.tapelint]` in `pyproject.toml`, and how it combines with the
command line into one `Settings` per checked file.

Discovery is ruff's: for each checked file, the nearest `pyproject.toml`
*with a `[tool.tapelint]` table*, from the file's directory upward, applies
(a pyproject without the table is passed over); lookups are cached per
directory. `--config PATH` uses that one file for every checked file;
`--isolated` ignores every configuration file.

Keys (codes, code prefixes such as `TL00`, `ALL`, and kebab-case rule names
are accepted wherever rules are named):

    select = ["TL001", "tracked-accumulation"]   # replaces the default set
    extend-select = ["TL901"]                    # adds to it
    ignore = ["TL006"]
    exclude = ["legacy"]          # replaces the built-in skip list (.venv, .git, ...)
    extend-exclude = ["data/*"]   # adds to it
    per-file-ignores = {"tests/*" = ["TL003"]}
    semantics = "torch"           # or "strict"
    unsafe-fixes = false
    report-unused-suppressions = false
    output-format = "text"        # json, sarif, github, lsp (TAPELINT_OUTPUT_FORMAT and --format win)
    file-timeout = 120            # CPU seconds per file (flag --file-timeout)
    file-memory-mb = 4096         # memory per file (flag --file-memory-mb)
    backward-functions = ["trainer.backward"]
    tracked-functions = ["model.encode"]
    src = ["src"]                 # where first-party imports are found (besides each file's directory)
    target-version = "py312"      # the Python the code is written for, py38 ... py314 (flag --target-version)
    cache-dir = ".tapelint_cache" # where results are cached (relative to this file; TAPELINT_CACHE_DIR and
                                  # --cache-dir win; read from the configuration at the current directory)

`target-version` decides who judges syntax (`tapelint.lint`). Unset, it is
the lower bound of `[project] requires-python` (`>=3.12`, `~=3.12.1`,
`>=3.12,<4`: py312; a value without a lower bound, or that is not PEP 440,
is ignored) in the pyproject.toml of the configuration, or, when no
configuration applies, in the nearest pyproject.toml above the file (ruff's
fallback); else the running Python's version. `--isolated` reads neither.

Globs are relative to the directory of the pyproject they come from. A glob
without `/` matches any path component (`legacy`, `test_*.py`); one with
`/` matches the path relative to that directory (`*` crosses `/`, a leading
`**/` also matches at the top).

Rule selection follows ruff: the configuration, then the command line, each
a layer whose `select` replaces what came before, `extend-select` adds, and
`ignore` removes; inside a layer a more specific selector wins (`select =
["TL001"]` with `ignore = ["TL00"]` keeps TL001). By default every rule but
TL901 is enabled; TL901 (unused suppressions) is enabled by
`report-unused-suppressions`, its command-line flag, or by selecting it
(also through `ALL` or a prefix). TL900 (parse error) stays enabled unless
some `ignore` names it: a file that cannot be parsed is never silently
passed. Other command-line options (`--semantics`, `--unsafe-fixes`,
`--report-unused-suppressions`, `--target-version`) override their key;
`--exclude` adds to the configured globs and `--extend-per-file-ignores` to
the per-file ignores (both relative to the current directory).

Exclusion (ruff's): `exclude`/`extend-exclude` and `--exclude` apply to what
a directory walk finds and, with `--force-exclude` (on by default), to paths
named on the command line, `--stdin-filename` and the language server's
documents alike. The walk also skips the built-in list (`build/` and `dist/`
among it, unless `exclude` replaces it) and, with `--respect-gitignore` (on by
default), what `.gitignore` ignores (`tapelint.gitignore`); neither applies
to a path named explicitly.

Unknown keys and bad values raise `ConfigError`, whose message is one line
naming the file and the key (the CLI exits 2 on it).
"""

from __future__ import annotations

import difflib
import os
import re
import sys
from dataclasses import dataclass, field, replace
from fnmatch import fnmatchcase
from typing import Any

from tapelint.diagnostics import Semantics
from tapelint.files import SKIPPED_DIRECTORIES, Excluder
from tapelint.gitignore import GitIgnore
from tapelint.reporters import FORMATS
from tapelint.rules.codes import CODES, resolve_code
from tapelint.settings import RUNNING, TARGET_VERSIONS, PythonVersion, Settings, parse_target_version

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python < 3.11 only
    import tomli as tomllib

CONFIG_FILE = "pyproject.toml"
PARSE_ERROR = "TL900"
UNUSED_SUPPRESSION = "TL901"
# The walk's built-in skip list: ruff's default `exclude`, which has `build`.
DEFAULT_SKIPPED_DIRECTORIES = SKIPPED_DIRECTORIES | {"build"}
_DOTTED_NAME = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$")
# One clause of a PEP 440 specifier set, as `requires-python` writes it
# (`>=3.12`, `~=3.12.1`, `==3.12.*`, `>=3.13.0rc1`): operator, major, minor.
_SPECIFIER = re.compile(
    r"\s*(~=|===|==|!=|<=|>=|<|>)\s*(\d+)(?:\.(\d+))?(?:\.\d+)*(?:\.\*)?"
    r"(?:(?:a|b|rc)\d+)?(?:\.post\d+)?(?:\.dev\d+)?\s*"
)
# The operators whose version bounds the allowed versions from below
# (`>3.11` still allows 3.11.1, so its bound is 3.11 too).
_LOWER_BOUND_OPERATORS = ("~=", "===", "==", ">=", ">")


class ConfigError(Exception):
    """A configuration file that cannot be used; the message is one line."""


@dataclass(frozen=True)
class Selector:
    """One rule selector as written, with the codes it stands for and how
    specific it is (ALL < a prefix, longer prefixes more specific < a code)."""

    text: str
    codes: frozenset[str]
    specificity: int


@dataclass(frozen=True)
class Selection:
    """One layer of rule selection (the configuration, or the command line)."""

    select: tuple[Selector, ...] | None = None
    extend_select: tuple[Selector, ...] = ()
    ignore: tuple[Selector, ...] = ()


@dataclass(frozen=True)
class RequiresPython:
    """The `[project] requires-python` of a pyproject.toml, whose lower bound
    is the default target version."""

    path: str
    text: str
    lower_bound: PythonVersion | None  # None: it sets none that tapelint can read


@dataclass(frozen=True)
class Config:
    """One validated `[tool.tapelint]` table; None means "not set"."""

    path: str | None = None  # the file it came from; None for the defaults
    root: str = ""  # absolute directory its globs are relative to
    selection: Selection = Selection()
    exclude: tuple[str, ...] | None = None
    extend_exclude: tuple[str, ...] = ()
    per_file_ignores: tuple[tuple[str, frozenset[str]], ...] = ()
    semantics: Semantics | None = None
    unsafe_fixes: bool | None = None
    report_unused_suppressions: bool | None = None
    output_format: str | None = None
    file_timeout: float | None = None
    file_memory_mb: int | None = None
    backward_functions: tuple[str, ...] = ()
    tracked_functions: tuple[str, ...] = ()
    src: tuple[str, ...] = ()  # absolute directories
    cache_dir: str | None = None  # absolute
    target_version: PythonVersion | None = None
    # The project's requires-python: this file's, or, for the defaults, the nearest pyproject.toml's.
    requires_python: RequiresPython | None = None

    @property
    def default_target_version(self) -> PythonVersion | None:
        """The configured `target-version`, else the lower bound of `requires-python`."""
        if self.target_version is not None:
            return self.target_version
        return self.requires_python.lower_bound if self.requires_python is not None else None


@dataclass(frozen=True)
class Overrides:
    """What the command line says; None means "not given"."""

    selection: Selection = Selection()
    exclude: tuple[str, ...] = ()  # added to the configured globs, relative to the current directory
    # Added to the configured per-file-ignores, globs relative to the current directory.
    per_file_ignores: tuple[tuple[str, frozenset[str]], ...] = ()
    semantics: Semantics | None = None
    unsafe_fixes: bool | None = None
    report_unused_suppressions: bool | None = None
    force_exclude: bool = True  # exclusions apply to named paths, stdin and editor documents
    respect_gitignore: bool = True
    file_timeout: float | None = None
    file_memory_mb: int | None = None
    target_version: PythonVersion | None = None


# --- selectors --------------------------------------------------------------


def parse_selector(text: str) -> Selector | None:
    """A code, a kebab-case name, a code prefix or `ALL`; None if it names nothing."""
    code = resolve_code(text)
    if code is not None:
        return Selector(text, frozenset({code}), 99)
    prefix = text.strip().upper()
    if prefix == "ALL":
        return Selector(text, frozenset(CODES), 0)
    codes = frozenset(c for c in CODES if prefix and c.startswith(prefix))
    return Selector(text, codes, len(prefix)) if codes else None


def enabled_codes(layers: tuple[Selection, ...]) -> frozenset[str]:
    """The rules left enabled after applying `layers` in order (ruff's algorithm)."""
    enabled = {code for code in CODES if code != UNUSED_SUPPRESSION}
    ignored_anywhere: set[str] = set()
    for layer in layers:
        chosen = (layer.select or ()) + layer.extend_select
        carry = set(enabled) if layer.select is None else set()
        for level in sorted({s.specificity for s in chosen + layer.ignore}):
            carry |= {c for s in chosen if s.specificity == level for c in s.codes}
            carry -= {c for s in layer.ignore if s.specificity == level for c in s.codes}
        enabled = carry
        ignored_anywhere |= {c for s in layer.ignore for c in s.codes}
    if PARSE_ERROR not in ignored_anywhere:
        enabled.add(PARSE_ERROR)
    return frozenset(enabled)


# --- reading a table ----------------------------------------------------------


def load_pyproject(path: str) -> tuple[dict[str, Any] | None, RequiresPython | None]:
    """The `[tool.tapelint]` table of a TOML file (None if it has none) and
    its `[project] requires-python` (None if it has none)."""
    try:
        with open(path, "rb") as handle:
            document = tomllib.load(handle)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: invalid TOML: not UTF-8") from None
    tool = document.get("tool")
    table = tool.get("tapelint") if isinstance(tool, dict) else None
    if table is not None and not isinstance(table, dict):
        raise ConfigError(f"{path}: [tool.tapelint] must be a table")
    project = document.get("project")
    requires = project.get("requires-python") if isinstance(project, dict) else None
    if requires is None:
        return table, None
    # The packaging standard's key, not ours: a value tapelint cannot read is ignored, never an error.
    lower_bound = requires_python_lower_bound(requires) if isinstance(requires, str) else None
    return table, RequiresPython(path, str(requires), lower_bound)


def requires_python_lower_bound(text: str) -> PythonVersion | None:
    """The oldest minor version a `requires-python` specifier set allows
    (`>=3.12,<4` and `~=3.12.1`: 3.12; the highest bound when there are
    several). None when no clause bounds it from below, or a clause is not a
    PEP 440 specifier (`3.12`, `^3.12`)."""
    bounds = []
    for clause in text.split(","):
        match = _SPECIFIER.fullmatch(clause)
        if match is None:
            return None
        if match[1] in _LOWER_BOUND_OPERATORS:
            bounds.append(PythonVersion(int(match[2]), int(match[3] or 0)))
    return max(bounds, default=None)


def parse_config(table: dict[str, Any], path: str, requires_python: RequiresPython | None = None) -> Config:
    """Validate a `[tool.tapelint]` table read from `path` (whose
    `requires-python` is `requires_python`)."""
    reader = _Reader(path)
    for key in table:
        if key not in _KEYS:
            close = difflib.get_close_matches(key.replace("_", "-"), _KEYS, n=1)
            hint = f" (did you mean `{close[0]}`?)" if close else f"; known keys: {', '.join(sorted(_KEYS))}"
            raise ConfigError(f"{path}: [tool.tapelint] unknown key `{key}`{hint}")
    get = table.get
    select = get("select")
    return Config(
        path=path,
        root=os.path.dirname(os.path.abspath(path)),
        selection=Selection(
            select=None if select is None else reader.selectors("select", select),
            extend_select=reader.selectors("extend-select", get("extend-select", [])),
            ignore=reader.selectors("ignore", get("ignore", [])),
        ),
        exclude=None if get("exclude") is None else reader.strings("exclude", get("exclude")),
        extend_exclude=reader.strings("extend-exclude", get("extend-exclude", [])),
        per_file_ignores=reader.per_file_ignores(get("per-file-ignores", {})),
        semantics=None if get("semantics") is None else reader.semantics(get("semantics")),
        unsafe_fixes=reader.boolean("unsafe-fixes", get("unsafe-fixes")),
        report_unused_suppressions=reader.boolean("report-unused-suppressions", get("report-unused-suppressions")),
        output_format=None if get("output-format") is None else reader.output_format(get("output-format")),
        file_timeout=reader.positive("file-timeout", get("file-timeout"), float),
        file_memory_mb=reader.positive("file-memory-mb", get("file-memory-mb"), int),
        backward_functions=reader.dotted_names("backward-functions", get("backward-functions", [])),
        tracked_functions=reader.dotted_names("tracked-functions", get("tracked-functions", [])),
        src=tuple(os.path.join(os.path.dirname(os.path.abspath(path)), folder)
                  for folder in reader.strings("src", get("src", []))),
        cache_dir=None if get("cache-dir") is None else os.path.join(
            os.path.dirname(os.path.abspath(path)), reader.string("cache-dir", get("cache-dir"))),
        target_version=None if get("target-version") is None else reader.target_version(get("target-version")),
        requires_python=requires_python,
    )


_KEYS = (
    "select", "extend-select", "ignore", "exclude", "extend-exclude", "per-file-ignores", "semantics",
    "unsafe-fixes", "report-unused-suppressions", "output-format", "backward-functions", "tracked-functions",
    "file-timeout", "file-memory-mb", "src", "cache-dir", "target-version",
)


@dataclass(frozen=True)
class _Reader:
    path: str

    def fail(self, key: str, problem: str) -> ConfigError:
        return ConfigError(f"{self.path}: [tool.tapelint] {key}: {problem}")

    def strings(self, key: str, value: Any) -> tuple[str, ...]:
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            raise self.fail(key, f"expected a list of strings, got {_show(value)}")
        return tuple(value)

    def string(self, key: str, value: Any) -> str:
        if not isinstance(value, str) or not value:
            raise self.fail(key, f"expected a non-empty string, got {_show(value)}")
        return value

    def selectors(self, key: str, value: Any) -> tuple[Selector, ...]:
        found = []
        for text in self.strings(key, value):
            selector = parse_selector(text)
            if selector is None:
                raise self.fail(key, f"unknown rule or prefix {text!r} (see `tapelint rules`)")
            found.append(selector)
        return tuple(found)

    def per_file_ignores(self, value: Any) -> tuple[tuple[str, frozenset[str]], ...]:
        key = "per-file-ignores"
        if not isinstance(value, dict):
            raise self.fail(key, f"expected a table of glob = [rules], got {_show(value)}")
        return tuple(
            (glob, frozenset(c for s in self.selectors(f"{key}.{glob!r}", codes) for c in s.codes))
            for glob, codes in value.items()
        )

    def semantics(self, value: Any) -> Semantics:
        choices = [s.value for s in Semantics]
        if value not in choices:
            raise self.fail("semantics", f"expected one of {', '.join(map(repr, choices))}, got {_show(value)}")
        return Semantics(value)

    def output_format(self, value: Any) -> str:
        if value not in FORMATS:
            raise self.fail("output-format", f"expected one of {', '.join(map(repr, FORMATS))}, got {_show(value)}")
        return str(value)

    def target_version(self, value: Any) -> PythonVersion:
        version = parse_target_version(value)
        if version is None:
            choices = ", ".join(repr(str(v)) for v in TARGET_VERSIONS)
            raise self.fail("target-version", f"expected one of {choices}, got {_show(value)}")
        return version

    def boolean(self, key: str, value: Any) -> bool | None:
        if value is not None and not isinstance(value, bool):
            raise self.fail(key, f"expected true or false, got {_show(value)}")
        return value

    def positive(self, key: str, value: Any, kind: type) -> Any:
        ok = isinstance(value, (int, float) if kind is float else int) and not isinstance(value, bool)
        if value is not None and not (ok and value > 0):
            raise self.fail(key, f"expected a positive {'number' if kind is float else 'integer'}, got {_show(value)}")
        return None if value is None else kind(value)

    def dotted_names(self, key: str, value: Any) -> tuple[str, ...]:
        names = self.strings(key, value)
        for name in names:
            if not _DOTTED_NAME.match(name):
                raise self.fail(key, f"{name!r} is not a dotted call name such as `trainer.backward`")
        return names


def _show(value: Any) -> str:
    kind = {bool: "a boolean", int: "a number", float: "a number", str: "a string",
            list: "a list", dict: "a table"}.get(type(value), type(value).__name__)
    text = repr(value)
    return f"{kind} ({text if len(text) <= 40 else text[:37] + '...'})"


# --- globs ----------------------------------------------------------------------


def glob_matches(glob: str, path: str, root: str) -> bool:
    """Does `glob` (relative to `root`) match `path`? See the module docstring."""
    absolute = os.path.abspath(path)
    relative = os.path.relpath(absolute, root).replace(os.sep, "/")
    if relative.startswith("../"):
        return False
    glob = glob.rstrip("/")
    if "/" not in glob:
        return any(fnmatchcase(part, glob) for part in relative.split("/") if part != ".")
    pattern = glob[2:] if glob.startswith("./") else glob
    if fnmatchcase(relative, pattern):
        return True
    return pattern.startswith("**/") and fnmatchcase(relative, pattern[3:])


# --- per-file resolution ----------------------------------------------------------


@dataclass(frozen=True)
class Resolver:
    """Settings and exclusions for each path, from the nearest configuration
    and the command line. Holds per-directory caches (hence `compare=False`)."""

    overrides: Overrides = Overrides()
    config_file: str | None = None  # --config
    isolated: bool = False  # --isolated
    _by_directory: dict[str, Config] = field(default_factory=dict, compare=False, repr=False)
    _settings: dict[Config, Settings] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.config_file is not None and not self.isolated:
            table, requires_python = load_pyproject(self.config_file)
            if table is None:
                raise ConfigError(f"{self.config_file}: no [tool.tapelint] table")
            self._by_directory[""] = parse_config(table, self.config_file, requires_python)

    def config_for(self, path: str) -> Config:
        """The configuration that applies to `path` (a file or a directory's entry)."""
        if self.isolated:
            return Config()
        if "" in self._by_directory:
            return self._by_directory[""]
        return self._config_of_directory(os.path.dirname(os.path.abspath(path)))

    def _config_of_directory(self, directory: str) -> Config:
        cached = self._by_directory.get(directory)
        if cached is not None:
            return cached
        candidate = _shown(os.path.join(directory, CONFIG_FILE))
        found = os.path.isfile(candidate)
        table, requires_python = load_pyproject(candidate) if found else (None, None)
        if table is not None:
            config = parse_config(table, candidate, requires_python)
        else:
            parent = os.path.dirname(directory)
            config = Config() if parent == directory else self._config_of_directory(parent)
            if found and config.path is None:
                # No configuration applies: this nearest pyproject.toml is the
                # project's, and its requires-python the target (ruff's fallback).
                config = Config(requires_python=requires_python)
        self._by_directory[directory] = config
        return config

    def settings_for(self, path: str) -> Settings:
        config = self.config_for(path)
        base = self._settings.get(config)
        if base is None:
            base = self._settings[config] = self._base_settings(config)
        here = os.path.abspath(os.curdir)
        ignored = frozenset(
            code
            for globs, root in ((config.per_file_ignores, config.root), (self.overrides.per_file_ignores, here))
            for glob, codes in globs
            if glob_matches(glob, path, root)
            for code in codes
        )
        return replace(base, ignore=base.ignore | ignored) if ignored else base

    def _base_settings(self, config: Config) -> Settings:
        cli = self.overrides
        enabled = set(enabled_codes((config.selection, cli.selection)))
        flag = _first(cli.report_unused_suppressions, config.report_unused_suppressions)
        if flag:
            enabled.add(UNUSED_SUPPRESSION)
        elif flag is False:
            enabled.discard(UNUSED_SUPPRESSION)
        return Settings(
            semantics=_first(cli.semantics, config.semantics) or Semantics.TORCH,
            select=frozenset(enabled),
            backward_functions=config.backward_functions,
            tracked_functions=config.tracked_functions,
            unsafe_fixes=bool(_first(cli.unsafe_fixes, config.unsafe_fixes)),
            report_unused_suppressions=UNUSED_SUPPRESSION in enabled,
            file_timeout=_first(cli.file_timeout, config.file_timeout) or Settings.file_timeout,
            file_memory_mb=_first(cli.file_memory_mb, config.file_memory_mb) or Settings.file_memory_mb,
            src=config.src,
            project_root=config.root,
            target_version=_first(cli.target_version, config.default_target_version) or RUNNING,
        )

    def excluder(self, named: tuple[str, ...] = ()) -> ConfigExcluder:
        """Exclusions for a run over `named` paths (those of the command line)."""
        return ConfigExcluder(
            globs=self.overrides.exclude,
            resolver=self,
            named=frozenset(named),
            gitignore=GitIgnore() if self.overrides.respect_gitignore else None,
        )


@dataclass(frozen=True)
class ConfigExcluder(Excluder):
    """Discovery's exclusions: the command line's globs (relative to the
    current directory) and the nearest configuration's, whose `exclude`
    replaces the built-in skip list during the walk; `.gitignore` during the
    walk; for `named` paths, only the globs, and only with `--force-exclude`."""

    resolver: Resolver = field(default_factory=Resolver, compare=False)
    named: frozenset[str] = frozenset()
    gitignore: GitIgnore | None = field(default=None, compare=False)

    def excludes(self, path: str) -> bool:
        if path in self.named:
            return self.excluded_by(path) is not None
        if self.excluded_by(path, force=True) is not None:
            return True
        return self.gitignore is not None and self.gitignore.ignores(path, is_directory=False)

    def excluded_by(self, path: str, force: bool = False) -> str | None:
        """The glob that excludes a path the user named (a file on the command
        line, `--stdin-filename`, an editor's document) and where it comes
        from, or None; always None with `--no-force-exclude` unless `force`."""
        if not (force or self.resolver.overrides.force_exclude):
            return None
        for glob in self.globs:
            if Excluder((glob,)).excludes(path):
                return f"`{glob}` (--exclude)"
        config = self.resolver.config_for(path)
        for key, globs in (("extend-exclude", config.extend_exclude), ("exclude", config.exclude or ())):
            for glob in globs:
                if glob_matches(glob, path, config.root):
                    return f"`{glob}` ({key} in {config.path})"
        return None

    def skips_directory(self, path: str) -> bool:
        config = self.resolver.config_for(path)
        if config.exclude is None and os.path.basename(path) in DEFAULT_SKIPPED_DIRECTORIES:
            return True
        if self.excluded_by(path, force=True) is not None:
            return True
        return self.gitignore is not None and self.gitignore.ignores(path, is_directory=True)


def _shown(path: str) -> str:
    """A path for messages: relative when under the current directory."""
    relative = os.path.relpath(path)
    return path if relative.startswith("..") else relative


def _first(*values: Any) -> Any:
    return next((value for value in values if value is not None), None)
