"""Screenshots with numbered labels on the elements the latest snapshot gave refs to.

The legend maps each number to its ref, role and name, so a model that reads the picture
acts with the same refs the snapshot printed.  Boxes come from ai snapshots with
``boxes=True``, which Playwright measures in its own script world (refs stay on their
elements across snapshots).  The page is captured as it is, with nothing added to it, and the
numbers are drawn onto the PNG afterwards (browser/labels.py): the page never sees a label,
so it can neither restyle one nor move its elements when one appears.  The boxes are
measured before and after the capture; an element that moved in between gets no number,
since its number would sit on whatever took its place.  The tab keeps the numbers, so a
person looking at the picture can type ``click 3``.
"""

from __future__ import annotations

from typing import Any

from playwright.async_api import Page

from ..browser.labels import Box, Label, Labels, draw
from ..browser.masked import screen_masks
from ..browser.session import Session
from ..browser.snapshot import PRINTED_REF, Node, inner_offset, parse
from ..commands.registry import NoParams, Registry
from .output import binary
from .read import SnapshotParams, remembered_snapshot

TOOLS = Registry()
MAX_LABELS = 300
# Captures tried while elements move under the picture; then the moved ones go unlabelled.
CAPTURES = 2
Placed = dict[str, tuple[Node, Box]]


def boxes(nodes: list[Node], offset: tuple[float, float] = (0, 0)) -> Placed:
    """ref → (node, (x, y, w, h)) in viewport pixels, iframe offsets added."""
    found: Placed = {}
    for node in nodes:
        box = node.box()
        if node.ref is not None and box is not None:
            found[node.ref] = (node, (box[0] + offset[0], box[1] + offset[1], box[2], box[3]))
        found.update(boxes(node.children, inner_offset(node, offset)))
    return found


async def measure(page: Page) -> Placed:
    """Where every element with a ref is now, by Playwright's own measure."""
    return boxes(parse(await page.aria_snapshot(mode="ai", boxes=True)))


async def capture(page: Page, refs: list[str], before: Placed) -> tuple[bytes, Placed, int]:
    """The viewport's PNG, the boxes of ``refs`` that held still around it (``before``: as
    measured just now), and how many moved.  ``caret="initial"``: hiding the caret would add
    a style to the page, a signal a page could move its elements on."""
    for attempt in range(CAPTURES):
        async with screen_masks(page) as mask:  # what the vault filled is painted over
            data = await page.screenshot(type="png", caret="initial", mask=mask)
        after = await measure(page)
        moved = [r for r in refs if r in before and before[r][1] != after.get(r, (None, None))[1]]
        if not moved or attempt == CAPTURES - 1:
            still = {r: before[r] for r in refs if r in before and r not in moved}
            return data, still, len(moved)
        before = after
    raise AssertionError("unreachable")


@TOOLS.tool("screenshot_annotated", family="output", gated=False, params=NoParams)
async def screenshot_annotated(session: Session, params: NoParams) -> dict[str, Any]:
    """A viewport PNG with numbered labels on the latest snapshot's refs, and the legend.

    Without an earlier snapshot of this page, an interactive one is taken first.
    """
    page = session.page
    latest = session.tab.snapshot if session.tab is not None else None
    refs = list(dict.fromkeys(PRINTED_REF.findall(latest.text))) if latest else []
    placed = await measure(page)
    if not set(refs) & set(placed):  # none yet, or of a document the tab has left
        fresh = await remembered_snapshot(session, SnapshotParams(interactive=True))
        refs = list(dict.fromkeys(PRINTED_REF.findall(fresh.text)))
        placed = await measure(page)
    viewport = page.viewport_size or await page.evaluate(
        "({width: innerWidth, height: innerHeight})"
    )
    width, height = viewport["width"], viewport["height"]
    data, placed, moved = await capture(page, refs, placed)
    numbered: list[tuple[int, Box]] = []
    legend: list[Label] = []
    for ref in refs:
        if ref not in placed or len(legend) == MAX_LABELS:
            continue
        node, (x, y, w, h) = placed[ref]
        if w <= 0 or h <= 0 or x >= width or y >= height or x + w <= 0 or y + h <= 0:
            continue
        label = Label(len(legend) + 1, ref, node.role, node.name or "")
        numbered.append((label.n, (x, y, w, h)))
        legend.append(label)
    hint = "make the viewport smaller (set_viewport)"
    shot = binary(session, draw(data, numbered, width), "image/png", hint)
    if session.tab is not None:  # its numbers stand for these refs: click 3
        session.tab.labels = Labels({label.n: label for label in legend})
    result = {
        **shot,
        "legend": [{"n": e.n, "ref": f"@{e.ref}", "role": e.role, "name": e.name} for e in legend],
        "unlabelled": len(refs) - len(legend),
    }
    if moved:
        result["note"] = f"{moved} element(s) moved while the picture was taken: not numbered."
    return result
