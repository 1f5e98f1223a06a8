"""Source text shown in messages: one line, and a long call shortened at
whole arguments, so the user still recognises the statement they wrote."""

from __future__ import annotations

from typing import Optional


def abbreviate(code: str, limit: int = 40) -> str:
    """Source text for a message, on one line and at most about `limit`
    characters: runs of whitespace (a call broken over lines) become one
    space; a longer call keeps the arguments that fit, whole
    (`self._update(self.opt_d, ...)`), anything else its start."""
    text = " ".join(code.split())
    if len(text) <= limit:
        return text
    opening = _outer_call_arguments(text)
    if opening is not None:
        kept = text[:opening + 1]
        for argument in _top_level_split(text[opening + 1:-1]):
            if len(kept) + len(argument) + len(", ...)") > limit:
                break
            kept += argument.strip() + ", "
        shortened = kept + "...)"
        if len(shortened) < len(text):
            return shortened
    return text[:limit - 3] + "..."


def _outer_call_arguments(text: str) -> Optional[int]:
    """Where the argument list of a call that spans all of `text` opens."""
    if not text.endswith(")"):
        return None
    depth = 0
    for index in range(len(text) - 1, -1, -1):
        depth += {")": 1, "]": 1, "}": 1, "(": -1, "[": -1, "{": -1}.get(text[index], 0)
        if depth == 0:
            return index if index > 0 and text[index] == "(" else None
    return None


def _top_level_split(arguments: str) -> list[str]:
    """The arguments of a call's text, split at its own commas (not those of
    nested calls, lists or strings)."""
    parts, depth, start, quote = [], 0, 0, ""
    for index, char in enumerate(arguments):
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        elif char == "," and depth == 0:
            parts.append(arguments[start:index])
            start = index + 1
    parts.append(arguments[start:])
    return parts
