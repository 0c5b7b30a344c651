"""What counts as a change of a watched page, and how the message shows it: pure text.

The watched text is the element's visible text (the page's main text without a selector)
with whitespace normalised: runs of spaces become one, lines are trimmed, empty lines go.
By default any difference is a change; ``contains`` fires when its text appears (and again
only after it went and came back), ``missing`` when its text disappears.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import Literal

SPACES = re.compile(r"[^\S\n]+")
MAX_KEPT = 100_000  # characters of a baseline kept in the store
DIFF_LINES = 12  # lines of a change message's diff at most
DIFF_CHARS = 1_200  # characters of it at most

Mode = Literal["change", "contains", "missing"]


def normalise(text: str) -> str:
    """Visible text with its whitespace normalised, cut to :data:`MAX_KEPT` characters.

    The lines past the cut are never normalised: a long page's text (an index of 400,000
    characters) would hold the event loop, and every controller's command with it.
    """
    kept: list[str] = []
    size = 0
    for raw in text.splitlines():
        line = SPACES.sub(" ", raw).strip()
        if line:
            kept.append(line)
            size += len(line) + 1
            if size > MAX_KEPT:
                break
    return "\n".join(kept)[:MAX_KEPT]


@dataclass(frozen=True)
class Seen:
    """What a check saw: the normalised text, and whether the watched words are in it."""

    text: str
    present: bool


def seen(text: str, needle: str | None) -> Seen:
    """The check's reading of ``text`` (raw visible text) for a monitor watching ``needle``."""
    clean = normalise(text)
    return Seen(clean, needle is not None and normalise(needle) in clean)


def headline(mode: Mode, needle: str | None, before: Seen, now: Seen) -> str | None:
    """What changed, as the message's first line says it after ``<address>``; None when
    nothing this monitor watches for happened."""
    if mode == "contains":
        return f"now contains {needle!r}" if now.present and not before.present else None
    if mode == "missing":
        return f"no longer contains {needle!r}" if before.present and not now.present else None
    return "changed" if now.text != before.text else None


def line_diff(old: str, new: str) -> str:
    """Removed (``-``) and added (``+``) lines, at most :data:`DIFF_LINES` lines and
    :data:`DIFF_CHARS` characters, saying so when cut."""
    lines = [
        line
        for line in difflib.unified_diff(old.splitlines(), new.splitlines(), n=0, lineterm="")
        if line[:1] in "+-" and not line.startswith(("+++", "---"))
    ]
    shown: list[str] = []
    used = 0
    for line in lines[:DIFF_LINES]:
        if used + len(line) > DIFF_CHARS:
            if not shown:  # one very long line: its start
                shown.append(line[:DIFF_CHARS] + "…")
            break
        shown.append(line)
        used += len(line) + 1
    if len(shown) < len(lines):
        shown.append(f"… ({len(lines) - len(shown)} more changed lines not shown)")
    return "\n".join(shown)
