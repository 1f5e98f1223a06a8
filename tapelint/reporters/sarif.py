"""`--format sarif`: one SARIF 2.1.0 log with one run, for GitHub code
scanning and every other SARIF viewer.

Choices that a consumer may need to know:

* Columns: the diagnostic model counts Unicode code points (0-based); SARIF
  counts from 1 and, by default, in UTF-16 code units. The run says
  `columnKind: unicodeCodePoints` and every column is shifted by one, so no
  source text is needed to write positions.
* Paths: a relative path (as given on the command line) is written relative to
  `%SRCROOT%`, which `originalUriBaseIds` resolves to the working directory;
  an absolute path is written as a `file:` URI. URIs percent-encode the file
  name's bytes (a name that is not UTF-8 included); elsewhere such a byte is
  written `\\xHH` (see the JSON reporter).
* Fixes: only fixes that carry edits become SARIF `fixes` (a `recompute` fix
  that describes a manual move has nothing to replace), and never the
  display-only `retain_graph` alternative: SARIF consumers may offer fixes as
  one-click changes, and that one hides the bug instead of fixing it. Every
  fix, with its safety, is still listed in the result's `properties.fixes`.
* The tool has no published home page, so `informationUri` and `helpUri`
  are written only if the installed package declares a project URL; the full
  rule documentation travels in each rule's `help` instead.
* Files that could not be checked are `toolExecutionNotifications` of the
  invocation, which is then not `executionSuccessful`.
* A notebook position (line and column within a cell) is not a position in
  the `.ipynb` file's text, so it has no `region`: the physical location
  names the notebook and carries `properties: {"cell": C, "region": ...}`
  (region within the cell), and fixes inside notebooks are not written.
"""

from __future__ import annotations

import json
import os
from importlib import metadata
from typing import Any, TextIO
from urllib.parse import quote

from tapelint.diagnostics import Diagnostic, Edit, FileError, Fix, Range, Related, Safety, Severity
from tapelint.reporters.base import Report, ReportOptions
from tapelint.reporters.json import without_surrogates
from tapelint.rules import ALL_RULES
from tapelint.rules.base import Rule

SCHEMA_URI = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
SRCROOT = "%SRCROOT%"
_LEVELS = {Severity.ERROR: "error", Severity.WARNING: "warning"}


def report(report: Report, out: TextIO, options: ReportOptions) -> None:
    json.dump(without_surrogates(to_sarif(report)), out, indent=2)
    out.write("\n")


def to_sarif(report: Report, cwd: str | None = None) -> dict[str, Any]:
    """The SARIF log of a run; `cwd` (default: the working directory) is what
    relative paths are relative to."""
    root = cwd if cwd is not None else os.getcwd()
    rule_index = {rule.code: index for index, rule in enumerate(ALL_RULES)}
    driver: dict[str, Any] = {
        "name": "tapelint",
        "version": report.version,
        "semanticVersion": report.version,
        "rules": [_rule(rule) for rule in ALL_RULES],
    }
    home = project_url()
    if home is not None:
        driver["informationUri"] = home
    return {
        "$schema": SCHEMA_URI,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {"driver": driver},
                "invocations": [_invocation(report.errors)],
                "originalUriBaseIds": {SRCROOT: {"uri": _directory_uri(root)}},
                "columnKind": "unicodeCodePoints",
                "results": [_result(d, rule_index.get(d.code)) for d in report.diagnostics],
                "properties": {"semantics": report.semantics.value},
            }
        ],
    }


def project_url() -> str | None:
    """The home page the installed distribution declares, if any: never a
    made-up address."""
    try:
        meta = metadata.metadata("tapelint")
    except metadata.PackageNotFoundError:
        return None
    for entry in meta.get_all("Project-URL") or ():
        label, _, url = entry.partition(",")
        if label.strip().lower() in ("homepage", "home", "documentation", "repository", "source"):
            return url.strip() or None
    return next(iter(meta.get_all("Home-page") or ()), None) or None


def _rule(rule: type[Rule]) -> dict[str, Any]:
    documentation = rule.documentation()
    return {
        "id": rule.code,
        "name": rule.name,
        "shortDescription": {"text": rule.summary},
        "fullDescription": {"text": _what_it_does(documentation) or rule.summary},
        "help": {"text": documentation, "markdown": documentation},
        "defaultConfiguration": {"level": _LEVELS[rule.severity]},
    }


def _what_it_does(documentation: str) -> str:
    """The "What it does" section as one paragraph of plain text."""
    section: list[str] = []
    inside = False
    for line in documentation.splitlines():
        if line.startswith("## "):
            if inside:
                break
            inside = line.strip() == "## What it does"
        elif inside:
            section.append(line.strip())
    return " ".join(part for part in section if part)


def _result(diagnostic: Diagnostic, rule_index: int | None) -> dict[str, Any]:
    result: dict[str, Any] = {
        "ruleId": diagnostic.code,
        "level": _LEVELS[diagnostic.severity],
        "message": {"text": diagnostic.message},
        "locations": [{"physicalLocation": _physical(diagnostic.path, diagnostic.range)}],
    }
    if rule_index is not None:
        result["ruleIndex"] = rule_index
    if diagnostic.related:
        result["relatedLocations"] = [_related(index, related) for index, related in enumerate(diagnostic.related)]
    fixes = [_fix(diagnostic.path, fix) for fix in diagnostic.fixes if _is_replacement(fix)]
    if fixes:
        result["fixes"] = fixes
    result["properties"] = {
        "name": diagnostic.name,
        "fails_under": [semantics.value for semantics in diagnostic.fails_under],
        "fixes": [
            {"kind": fix.kind.value, "safety": fix.safety.value, "description": fix.description}
            for fix in diagnostic.fixes
        ],
    }
    return result


def _related(index: int, related: Related) -> dict[str, Any]:
    return {
        "id": index,
        "physicalLocation": _physical(related.path, related.range),
        "message": {"text": f"{related.role.value}: {related.message}"},
    }


def _is_replacement(fix: Fix) -> bool:
    return (
        bool(fix.edits)
        and fix.safety is not Safety.DISPLAY_ONLY
        and all(edit.range.start.cell is None for edit in fix.edits)
    )


def _fix(path: str, fix: Fix) -> dict[str, Any]:
    return {
        "description": {"text": f"{fix.description} ({fix.safety.value} fix)"},
        "artifactChanges": [
            {"artifactLocation": _artifact(path), "replacements": [_replacement(e) for e in fix.edits]},
        ],
    }


def _replacement(edit: Edit) -> dict[str, Any]:
    return {"deletedRegion": _region(edit.range), "insertedContent": {"text": edit.new_text}}


def _invocation(errors: tuple[FileError, ...]) -> dict[str, Any]:
    invocation: dict[str, Any] = {"executionSuccessful": not errors}
    if errors:
        invocation["toolExecutionNotifications"] = [
            {
                "level": "error",
                "message": {"text": error.message},
                "locations": [{"physicalLocation": {"artifactLocation": _artifact(error.path)}}],
            }
            for error in errors
        ]
    return invocation


def _physical(path: str, range_: Range) -> dict[str, Any]:
    if range_.start.cell is not None:
        cell = {"cell": range_.start.cell, "region": _region(range_)}
        return {"artifactLocation": _artifact(path), "properties": cell}
    return {"artifactLocation": _artifact(path), "region": _region(range_)}


def _region(range_: Range) -> dict[str, int]:
    """1-based lines as they are; 0-based columns shifted to SARIF's 1-based."""
    return {
        "startLine": range_.start.line,
        "startColumn": range_.start.column + 1,
        "endLine": range_.end.line,
        "endColumn": range_.end.column + 1,
    }


def _artifact(path: str) -> dict[str, str]:
    if os.path.isabs(path):
        return {"uri": _file_uri(path)}
    relative = os.path.normpath(path).replace(os.sep, "/")
    return {"uri": quote(os.fsencode(relative)), "uriBaseId": SRCROOT}


def _file_uri(path: str) -> str:
    posix = os.path.abspath(path).replace(os.sep, "/")
    # Bytes, so a file name that is not UTF-8 is percent-encoded as it is on disk.
    return "file://" + quote(os.fsencode(posix if posix.startswith("/") else "/" + posix))


def _directory_uri(path: str) -> str:
    """`originalUriBaseIds` entries must end with a slash to be a base."""
    uri = _file_uri(path)
    return uri if uri.endswith("/") else uri + "/"
