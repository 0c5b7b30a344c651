"""Refs across pages: where a page starts (a ref or a line), where it ends, what it left out.

A snapshot over the result cap ends where a ref starts a line, names the whole subtrees it
left out by ref, and says ``start=@eN`` for the next page; a ref that names nothing is
``STALE_REF``.  Refs stay valid across calls while their elements live, so pages do too.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...errors import BrowserdError, ErrorCode
from ..refs import parse_ref
from .printer import Printer
from .tree import Node, depth, find


@dataclass
class Rendered:
    """The printed snapshot and what it holds."""

    text: str
    refs: int  # refs shown
    chars: int  # characters of the whole snapshot (from ``start``), shown or not
    truncated: bool
    next: str | None = None  # where the next page starts, when cut


def stale(ref: str) -> BrowserdError:
    return BrowserdError(
        ErrorCode.STALE_REF, f"Ref @{ref} is not on the page any more: take a new snapshot."
    )


def first_line_of(printer: Printer, nodes: list[Node], start: str | None) -> int:
    """Where a page of the snapshot starts: at a ref's first line or a 1-based line number."""
    if start is None:
        return 0
    if start.isdigit():
        line = int(start) - 1
        if not 0 <= line < max(len(printer.lines), 1):
            raise BrowserdError(
                ErrorCode.INVALID_PARAMS,
                f"Line {start} is not in this snapshot: it has {len(printer.lines):,} lines.",
            )
        return line
    ref = parse_ref(start)
    node = find(nodes, ref)
    if node is None:
        raise stale(ref)
    if node.span is None:
        raise BrowserdError(
            ErrorCode.INVALID_PARAMS, f"@{ref} is not part of this view: start at another ref."
        )
    return node.span[0]


LISTED = 12  # left-out subtrees named at most


def cut(printer: Printer, first: int, max_chars: int) -> Rendered:
    """The lines from ``first`` up to ``max_chars``; when cut, say what is left and where.

    A cut ends where a ref starts a line when one is near, so the next page starts at that
    ref (``start=@e530``) and nothing is missed or repeated; else at a line number.
    """
    lines, total = printer.lines, len(printer.lines)
    size = sum(len(line) + 1 for line in lines[first:])
    if size <= max_chars:
        shown = lines[first:]
        if first:
            shown = [*shown, f"[snapshot lines {first + 1:,}–{total:,} of {total:,}: the end]"]
        refs = sum(printer.with_ref[first:])
        return Rendered("\n".join(shown), refs, size, truncated=False)

    def note(end: int, start: str, parts: str) -> str:
        return (
            f"[snapshot cut: lines {first + 1:,}–{end:,} of {total:,} shown, of {size:,} "
            f"characters. Next page: start={start} (--start {start}), same options. {parts} "
            "Narrow it: interactive=true (-i), depth=N (-d), viewport=true (-v), "
            "scope=<ref or selector> (-s).]"
        )

    room = min(900, max_chars // 4)  # for the list of what was left out
    budget = max_chars - room - len(note(total, f"@f{total}e{total}", ""))
    end, used = first, 0
    while end < total and used + len(lines[end]) + 1 <= budget:
        used += len(lines[end]) + 1
        end += 1
    shown = lines[first:end]
    if end == first:  # one line longer than the whole budget: shown shortened, never skipped
        shown, end = [lines[first][: max(budget, 80)] + "…"], first + 1
    end, start = page_end(printer, first, end)
    text = "\n".join([*shown[: end - first], note(end, start, left_out(printer, end, room))])
    refs = sum(printer.with_ref[first:end])
    return Rendered(text, refs, size, truncated=True, next=start)


def page_end(printer: Printer, first: int, end: int) -> tuple[int, str]:
    """Move the cut back (a little) to a line a ref starts; the next page's ``start``.

    Among the last lines, the least indented such line wins, so a page ends between whole
    subtrees rather than inside one.
    """
    lines = printer.lines
    window = max(first, end - min(50, max(1, (end - first) // 4)))
    best: tuple[int, int, str] | None = None
    for k in range(end, window, -1):
        ref = anchor(printer, k)
        indent = len(lines[k]) - len(lines[k].lstrip(" ")) if k < len(lines) else 0
        if ref is not None and (best is None or indent < best[0]):
            best = (indent, k, ref)
    return (best[1], f"@{best[2]}") if best else (end, str(end + 1))


def anchor(printer: Printer, line: int) -> str | None:
    """The ref of the outermost node whose lines begin at ``line``, if any."""
    if line >= len(printer.lines):
        return None
    node: Node | None = printer.owners[line]
    found = None
    while node is not None and node.span is not None and node.span[0] == line:
        found = node.ref or found
        node = node.parent
    return found


def left_out(printer: Printer, end: int, room: int) -> str:
    """The whole subtrees after the cut, outermost first, by ref, role and lines, in ``room``."""
    parts: list[tuple[int, Node]] = []
    line = end
    while line < len(printer.lines):
        node = printer.owners[line]
        while (
            node.parent is not None and node.parent.span is not None and node.parent.span[0] >= end
        ):
            node = node.parent
        span = node.span or (line, line + 1)
        parts.append((span[1] - span[0], node))
        line = max(span[1], line + 1)
    named = sorted((p for p in parts if p[1].ref), key=lambda p: (depth(p[1]), -p[0]))
    for count in range(min(LISTED, len(named)), -1, -1):
        text = describe(parts, named[:count])
        if len(text) <= room:
            return text
    return ""


def describe(parts: list[tuple[int, Node]], listed: list[tuple[int, Node]]) -> str:
    """``Left out (…): @e145 table "T1" (161 lines); …; and 27 more parts (108 lines).``"""
    rest = len(parts) - len(listed)
    rest_lines = sum(p[0] for p in parts) - sum(p[0] for p in listed)
    if not listed:
        return f"Left out: {len(parts):,} parts ({rest_lines:,} lines)."
    entries = []
    for lines, node in sorted(listed, key=lambda p: p[1].span or (0, 0)):
        name = node.name or ""
        name = f' "{name[:30]}…"' if len(name) > 30 else f' "{name}"' if name else ""
        entries.append(f"@{node.ref} {node.role}{name} ({lines:,} lines)")
    text = "Left out (scope to one: snapshot @REF): " + "; ".join(entries)
    return text + (f"; and {rest:,} more parts ({rest_lines:,} lines)." if rest else ".")
