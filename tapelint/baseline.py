"""Baselines: adopt tapelint on a large codebase by recording today's findings
(`--write-baseline FILE`) and reporting only new ones (`--baseline FILE`).

A finding is matched by a fingerprint that does not contain line numbers,
so edits elsewhere in the file (lines inserted above it) keep it matched:

    (path, code, digest, occurrence)

* `path`: relative to the baseline file's directory, `/`-separated, so the
  baseline works whatever directory tapelint is run from and whatever path
  is named on the command line.
* `digest`: SHA-256 (first 16 hex digits) of the code, the primary range's
  source lines with whitespace collapsed (in a notebook, the cell's lines),
  and the value the finding is about (the first `name` quoted in its
  message). Messages themselves are not hashed: they mention line numbers.
* `occurrence`: 0 for the first finding in the file with that code and
  digest, 1 for the second, ... (identical lines stay distinct).

A finding whose own line is edited is new: that is the point.

File format (JSON, UTF-8, findings sorted so the file diffs well):

    {
      "tool": "tapelint",
      "version": 1,
      "findings": [
        {"path": "src/train.py", "code": "TL001", "fingerprint": "0c1d...",
         "occurrence": 0, "line": 10, "message": "..."}
      ]
    }

`line` and `message` are for the reader only; matching ignores them.
Readers reject a `version` they do not know.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace

from tapelint.diagnostics import Diagnostic, FileResult
from tapelint.files import line_texts
from tapelint.notebooks import cell_lines, is_notebook

VERSION = 1
_QUOTED = re.compile(r"`([^`]+)`")


class BaselineError(Exception):
    """A baseline file that cannot be read or written; the message is one line."""


@dataclass(frozen=True, order=True)
class Fingerprint:
    path: str
    code: str
    digest: str
    occurrence: int


ReadText = Callable[[str], "str | None"]


@dataclass(frozen=True)
class Baseline:
    fingerprints: frozenset[Fingerprint]
    directory: str  # absolute directory the paths are relative to

    def filter(self, results: Sequence[FileResult], read_text: ReadText) -> tuple[tuple[FileResult, ...], int]:
        """The results without baselined findings, and how many baseline
        entries matched nothing (fixed since, or edited)."""
        kept: list[FileResult] = []
        matched: set[Fingerprint] = set()
        for result in results:
            pairs = fingerprint(result.diagnostics, read_text, self.directory)
            matched |= {f for _, f in pairs if f in self.fingerprints}
            kept.append(replace(result, diagnostics=tuple(d for d, f in pairs if f not in self.fingerprints)))
        return tuple(kept), len(self.fingerprints - matched)


def fingerprint(
    diagnostics: Iterable[Diagnostic], read_text: ReadText, directory: str
) -> list[tuple[Diagnostic, Fingerprint]]:
    """Each diagnostic with its fingerprint, in position order."""
    seen: Counter[tuple[str, str, str]] = Counter()
    texts: dict[str, str | None] = {}
    pairs = []
    for diagnostic in sorted(diagnostics, key=lambda d: d.sort_key):
        if diagnostic.path not in texts:
            texts[diagnostic.path] = read_text(diagnostic.path)
        path = os.path.relpath(os.path.abspath(diagnostic.path), directory).replace(os.sep, "/")
        digest = _digest(diagnostic, texts[diagnostic.path])
        key = (path, diagnostic.code, digest)
        pairs.append((diagnostic, Fingerprint(path, diagnostic.code, digest, seen[key])))
        seen[key] += 1
    return pairs


def _digest(diagnostic: Diagnostic, text: str | None) -> str:
    start, end = diagnostic.range.start, diagnostic.range.end
    if text is None:
        lines: list[str] = []
    elif is_notebook(diagnostic.path):
        lines = cell_lines(text).get(start.cell or 0, [])
    else:
        lines = line_texts(text)
    primary = " ".join(" ".join(lines[start.line - 1:end.line]).split())
    value = _QUOTED.search(diagnostic.message)
    material = "\0".join((diagnostic.code, primary, value[1] if value else ""))
    return hashlib.sha256(material.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def write(path: str, results: Sequence[FileResult], read_text: ReadText) -> int:
    """Record every finding of `results` in `path`; returns how many."""
    directory = os.path.dirname(os.path.abspath(path))
    pairs = fingerprint((d for r in results for d in r.diagnostics), read_text, directory)
    findings = sorted(
        (
            {"path": f.path, "code": f.code, "fingerprint": f.digest, "occurrence": f.occurrence,
             "line": d.range.start.line, **({"cell": d.range.start.cell} if d.range.start.cell else {}),
             "message": d.message}
            for d, f in pairs
        ),
        key=lambda e: (e["path"], e.get("cell", 0), e["line"], e["code"], e["occurrence"]),
    )
    document = {"tool": "tapelint", "version": VERSION, "findings": findings}
    try:
        with open(path, "w", encoding="utf-8") as handle:
            json.dump(document, handle, indent=2, ensure_ascii=False)
            handle.write("\n")
    except OSError as exc:
        raise BaselineError(f"{path}: cannot write the baseline: {exc.strerror or exc}") from None
    return len(findings)


def load(path: str) -> Baseline:
    """Read a baseline file. Raises `BaselineError`."""
    try:
        with open(path, encoding="utf-8") as handle:
            document = json.load(handle)
    except OSError as exc:
        raise BaselineError(f"{path}: cannot read the baseline: {exc.strerror or exc}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise BaselineError(f"{path}: not a tapelint baseline: {str(exc).splitlines()[0]}") from None
    if not isinstance(document, dict) or document.get("tool") != "tapelint":
        raise BaselineError(f"{path}: not a tapelint baseline")
    if document.get("version") != VERSION:
        raise BaselineError(
            f"{path}: baseline version {document.get('version')!r} is not supported (expected {VERSION})")
    try:
        fingerprints = frozenset(
            Fingerprint(str(e["path"]), str(e["code"]), str(e["fingerprint"]), int(e["occurrence"]))
            for e in document["findings"]
        )
    except (KeyError, TypeError, ValueError):
        raise BaselineError(f"{path}: malformed baseline entry") from None
    return Baseline(fingerprints, os.path.dirname(os.path.abspath(path)))
