"""What changed between two printed snapshots of one document, readable without the first.

``snapshot --delta`` sends a model only the lines that came, went or changed, each with the
lines that place it: its ancestors in the tree and the heading it sits under, unmarked.
Refs are Playwright's own and stay put while the document lives, so an unchanged element
keeps the ref the full snapshot gave it, and a line whose ref survives with new text is
``~`` changed rather than a removal and an addition.  A removed subtree is one line that
says how many lines it held: its refs are gone, and a model acts on nothing inside it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from difflib import SequenceMatcher

from .snapshot import printed_ref as ref_of

HEADING = re.compile(r"^ *- '?heading\b")


@dataclass(frozen=True)
class Delta:
    """The printed delta and what it counts."""

    text: str
    added: int
    removed: int
    changed: int
    refs: int  # refs on the marked lines and their context


def indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def parents(lines: list[str]) -> list[int | None]:
    """Each line's parent: the nearest line above it that is less indented."""
    stack: list[int] = []
    found: list[int | None] = []
    for i, line in enumerate(lines):
        while stack and indent(lines[stack[-1]]) >= indent(line):
            stack.pop()
        found.append(stack[-1] if stack else None)
        stack.append(i)
    return found


def ancestors(index: int | None, parent: list[int | None]) -> list[int]:
    chain = []
    while index is not None:
        chain.append(index)
        index = parent[index]
    return chain


def headings_above(lines: list[str]) -> list[int | None]:
    """Each line's nearest heading above it and no deeper: the section it is in."""
    stack: list[int] = []  # headings, less indented towards the bottom
    found: list[int | None] = []
    for i, line in enumerate(lines):
        depth = indent(line)
        found.append(next((h for h in reversed(stack) if indent(lines[h]) <= depth), None))
        if HEADING.match(line):
            while stack and indent(lines[stack[-1]]) >= depth:
                stack.pop()
            stack.append(i)
    return found


def last_kept(old: list[str], kept: dict[int, int]) -> list[int]:
    """For each old line, the last new line kept from the old lines before it (-1: none)."""
    found, last = [], -1
    for i in range(len(old)):
        found.append(last)
        if i in kept:
            last = max(last, kept[i])
    return found


def matched(before: list[str], after: list[str]) -> tuple[dict[int, int], set[int]]:
    """Old line → new line for the lines kept or changed in place; the new lines that changed.

    A line kept as it was maps through the diff's equal runs; a line whose ref is on a new
    line with other text (a field's value, a checkbox's state) maps to that line.
    """
    kept: dict[int, int] = {}
    gone: list[int] = []
    came: list[int] = []
    ops = SequenceMatcher(None, before, after, autojunk=False).get_opcodes()
    for tag, i1, i2, j1, j2 in ops:
        if tag == "equal":
            kept.update((i1 + k, j1 + k) for k in range(i2 - i1))
        else:
            gone += range(i1, i2)
            came += range(j1, j2)
    by_ref = {ref: j for j in came if (ref := ref_of(after[j]))}
    changed: set[int] = set()
    for i in gone:
        j = by_ref.pop(ref_of(before[i]) or "", None)
        if j is not None:
            kept[i] = j
            changed.add(j)
    return kept, changed


def compare(before: str, after: str) -> Delta:
    """The delta from ``before`` to ``after`` (printed snapshots), headed by what it is."""
    old, new = before.splitlines(), after.splitlines()
    kept, changed = matched(old, new)
    new_parent = parents(new)
    came = set(range(len(new))) - set(kept.values())
    marks = {j: "~" for j in changed} | {j: "+" for j in came}
    section = headings_above(new)
    context: set[int] = set()
    for j in marks:
        context.update(ancestors(new_parent[j], new_parent), ancestors(section[j], new_parent))
    gone, placed_by = removals(old, kept)
    context.update(placed_by)
    context -= marks.keys()
    out = list(gone.get(-1, []))
    for j, line in enumerate(new):
        if j in marks or j in context:
            out.append(f"{marks.get(j, ' ')} {line}")
        out += gone.get(j, [])
    if not out:
        text = f"[delta: nothing changed since this tab's last snapshot ({len(new):,} lines)]"
        return Delta(text, 0, 0, 0, 0)
    removed = len(old) - len(kept)
    counts = ", ".join(
        f"{n:,} {what}"
        for n, what in (
            (len(came), "added (+)"),
            (removed, "removed (-)"),
            (len(changed), "changed (~)"),
        )
        if n
    )
    placed = ", placed by the unmarked lines" if context else ""
    head = (
        f"[delta since this tab's last snapshot: {counts}{placed}; its other "
        f"{len(new) - len(marks) - len(context):,} lines and their refs are unchanged]"
    )
    refs = sum(1 for j in marks.keys() | context if ref_of(new[j]))
    return Delta("\n".join([head, *out]), len(came), removed, len(changed), refs)


def removals(old: list[str], kept: dict[int, int]) -> tuple[dict[int, list[str]], set[int]]:
    """The removed lines, by the new line they follow (-1: the top); the new lines that
    place them (their kept ancestors).  A removed line whose parent went too is counted in
    that parent's line, not shown.
    """
    old_parent = parents(old)
    removed = [i for i in range(len(old)) if i not in kept]
    inside = {i: 0 for i in removed if old_parent[i] is None or old_parent[i] in kept}
    for i in removed:
        top = next(a for a in ancestors(i, old_parent) if a in inside)
        inside[top] += top != i
    anchor = last_kept(old, kept)
    shown: dict[int, list[str]] = {}
    placed_by: set[int] = set()
    for i, count in inside.items():
        placed_by.update(kept[a] for a in ancestors(old_parent[i], old_parent))
        line = f"- {old[i]}" + (f"  (and the {count:,} lines inside it)" if count else "")
        shown.setdefault(anchor[i], []).append(line)
    return shown, placed_by
