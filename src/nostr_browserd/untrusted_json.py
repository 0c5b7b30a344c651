"""JSON from outside (relays, peers, controllers): every failure is one ``ValueError``.

``json.loads`` raises ``RecursionError`` (not a ``ValueError``) on deeply nested input such
as ``"[" * 60000``, and a structure nested just below Python's limit parses but breaks the
next recursive walk over it (``json.dumps``, redaction).  Nothing we receive legitimately
nests deeper than a few levels, so :func:`loads` refuses anything past :data:`MAX_DEPTH`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

__all__ = ["MAX_DEPTH", "BadJSON", "json_object", "loads"]

MAX_DEPTH = 32
"""Deepest nesting of arrays and objects accepted (an event in a relay frame needs 4)."""


class BadJSON(ValueError):
    """Text that is not JSON, or JSON nested deeper than :data:`MAX_DEPTH`."""


def loads(text: str | bytes, max_depth: int = MAX_DEPTH) -> Any:
    """``json.loads`` that raises only :class:`BadJSON` on bad input, whatever the input."""
    try:
        value = json.loads(text)
    except RecursionError:
        raise BadJSON(f"JSON nested deeper than {max_depth} levels") from None
    except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError, too many int digits
        raise BadJSON(f"Not valid JSON: {getattr(exc, 'msg', exc)}") from None
    if _brackets(text) > max_depth and _nests_deeper(value, max_depth):
        raise BadJSON(f"JSON nested deeper than {max_depth} levels")
    return value


def json_object(text: str) -> dict[str, Any] | None:
    """The JSON object ``text`` holds, or None when it holds anything else or is not JSON."""
    if not text.startswith("{"):
        return None
    try:
        value = loads(text)
    except BadJSON:
        return None
    return value if isinstance(value, dict) else None


def _brackets(text: str | bytes) -> int:
    """An upper bound of the nesting depth, counted in C: most messages stop here."""
    if isinstance(text, str):
        return text.count("[") + text.count("{")
    return text.count(b"[") + text.count(b"{")


def _nests_deeper(value: Any, max_depth: int) -> bool:
    """Whether arrays and objects nest more than ``max_depth`` deep (iteratively)."""
    stack = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        children: Iterable[Any]
        if isinstance(node, dict):
            children = node.values()
        elif isinstance(node, list):
            children = node
        else:
            continue
        if depth > max_depth:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False
