"""Provenance analysis (placeholder until the analyzer lands)."""

from __future__ import annotations

import libcst as cst

from tapelint.analysis.model import Hazard
from tapelint.settings import Settings


def analyze_module(module: cst.Module, settings: Settings) -> list[Hazard]:
    return []
