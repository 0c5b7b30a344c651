"""Lines a model has read already: a site's header and navigation, after a click moved on.

Every page of a site repeats its banner and navigation.  When the page navigated and this
tab's last snapshot of the same site, taken with the same options, began (or ended) with
the same lines, refs aside, those lines print as one: how many, which landmarks they hold,
and that ``--full`` shows them.  Such a run holds landmarks (banner, navigation…) and what
lies between them, never a line of the page's ``main``, and begins and ends in a landmark
(or at the page's top or bottom).  The refs the model read on them still work: the
elision maps each to the ref its element has now (``refs.alias``), so a ref is never
ambiguous, since Playwright never gives one ref to two documents of a page.  Snapshots of
the same document after that leave out the same lines while they stay the same, so a
delta between the two says only what changed.
"""

from __future__ import annotations

from .pages import Rendered
from .printer import PRINTED_REF, Printer, Seen, printed_ref
from .tree import Node

LANDMARKS = frozenset(["banner", "navigation", "complementary", "contentinfo", "search"])


SHORTEST = 3  # runs shorter than this print as they are


def seen(printer: Printer, origin: str) -> Seen:
    """The whole print of ``printer``, as the next snapshot compares with it."""
    refs = tuple(printed_ref(line) for line in printer.lines)
    lines = tuple(without_ref(line) for line in printer.lines)
    kinds = tuple(place(node) for node in printer.owners)
    return Seen(origin, lines, refs, kinds)


def place(node: Node | None) -> str:
    """Where a printed node is: in the page's main part, in a landmark around it, or else."""
    kind = "other"
    while node is not None:
        if node.role == "main":
            return "main"
        if node.role in LANDMARKS:
            kind = "landmark"
        node = node.parent
    return kind


def without_ref(line: str) -> str:
    match = PRINTED_REF.match(line)
    return line if match is None else line[: match.start(1) - 2] + line[match.end(1) :]


def elide(printer: Printer, now: Seen, before: Seen, navigated: bool) -> Rendered:
    """The print with the runs ``before`` showed the same left out, and ``now`` with them.

    After a navigation the runs are the longest same top and bottom; in the same document,
    the runs the last snapshot left out, while they are still the same.
    """
    total = len(now.lines)
    if navigated:
        head = same_top(now, before)
        tail = same_bottom(now, before, head)
    else:
        head, tail = before.head, before.tail
        if now.lines[:head] != before.lines[:head] or (
            tail and now.lines[total - tail :] != before.lines[len(before.lines) - tail :]
        ):
            head = tail = 0
    head = head if head >= SHORTEST else 0
    tail = tail if tail >= SHORTEST and head + tail < total else 0
    aliases: dict[str, str] = {}
    if navigated:
        pairs = [*zip(before.refs[:head], now.refs[:head], strict=True)]
        if tail:
            pairs += zip(before.refs[-tail:], now.refs[-tail:], strict=True)
        aliases = {old: new for old, new in pairs if old and new and old != new}
    lines = printer.lines[head : total - tail]
    if head:
        lines = [run(printer, 0, head), *lines]
    if tail:
        lines = [*lines, run(printer, total - tail, total)]
    text = "\n".join(lines)
    refs = sum(printer.with_ref[head : total - tail])
    shown = Seen(now.origin, now.lines, now.refs, now.kinds, head, tail, aliases)
    return Rendered(text, refs, len(text), truncated=False, seen=shown)


def same_top(now: Seen, before: Seen) -> int:
    """How many lines ``now`` begins with as ``before`` did: none in ``main``, the last in a
    landmark, and the next line outside them all (a run ends between whole subtrees)."""
    depth = [indent(line) for line in now.lines]
    count = 0
    for a, b, kind in zip(now.lines, before.lines, now.kinds, strict=False):
        if a != b or kind == "main":
            break
        count += 1
    while count:
        count = max((i + 1 for i in range(count) if now.kinds[i] == "landmark"), default=0)
        if count == 0 or count == len(depth) or depth[count] <= min(depth[:count]):
            return count
        count -= 1
    return 0


def same_bottom(now: Seen, before: Seen, head: int) -> int:
    """How many lines ``now`` ends with as ``before`` did, below the top run ``head``: none in
    ``main``, the first in a landmark, and none inside a subtree that starts above them."""
    depth = [indent(line) for line in now.lines]
    total, count = len(now.lines), 0
    while (
        count < min(total - head, len(before.lines) - head)
        and now.lines[total - 1 - count] == before.lines[len(before.lines) - 1 - count]
        and now.kinds[total - 1 - count] != "main"
    ):
        count += 1
    while count:
        landmarks = (i for i in range(total - count, total) if now.kinds[i] == "landmark")
        start = next(landmarks, total)
        count = total - start
        if count == 0 or whole(depth, start):
            return count
        count -= 1
    return 0


def whole(depth: list[int], start: int) -> bool:
    """Whether no line from ``start`` down has its parent (the nearest line above it that is
    less indented) above ``start``."""
    if start == 0:
        return True
    above = min(depth[:start])
    inside = None  # the least indent from start to the line before this one
    for level in depth[start:]:
        if (inside is None or inside >= level) and above < level:
            return False
        inside = level if inside is None else min(inside, level)
    return True


def indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def run(printer: Printer, start: int, end: int) -> str:
    """The one line that stands for printed lines [start, end), as indented as the first."""
    regions = [landmark(printer.owners[i]) for i in range(start, end)]
    names = ", ".join(dict.fromkeys(r for r in regions if r))
    held = f": {names}" if names else ""
    indent = printer.lines[start][: len(printer.lines[start]) - len(printer.lines[start].lstrip())]
    return (
        f"{indent}- ({end - start} lines same as before, old refs working{held}; "
        "snapshot --full shows them)"
    )


def landmark(node: Node | None) -> str | None:
    """The outermost landmark a printed node sits in, as ``navigation "Sidebar"``."""
    found = None
    while node is not None:
        if node.role in LANDMARKS:
            found = node.role + (f' "{node.name}"' if node.name else "")
        node = node.parent
    return found
