"""Screenshots with numbered labels on the elements the latest snapshot gave refs to.

The legend maps each number to its ref, role and name, so a model that reads the picture
acts with the same refs the snapshot printed.  Boxes come from one ai snapshot with
``boxes=True`` (refs stay on their elements across snapshots); the labels are an overlay
that is removed right after the picture is taken.  The tab keeps the numbers, so a person
looking at the picture can type ``click 3`` (browser/labels.py).
"""

from __future__ import annotations

from typing import Any

from ..browser.labels import Labels
from ..browser.masked import screen_masks
from ..browser.session import Session
from ..browser.snapshot import PRINTED_REF, Node, inner_offset, parse
from ..commands.registry import NoParams, Registry
from .output import binary
from .read import SnapshotParams, remembered_snapshot

TOOLS = Registry()
MAX_LABELS = 300
OVERLAY_ID = "__nbd_annotations"
DRAW_JS = """([id, labels]) => {
  const layer = document.createElement('div');
  layer.id = id;
  layer.style.cssText = 'position:fixed;inset:0;pointer-events:none;z-index:2147483647';
  for (const l of labels) {
    const box = document.createElement('div');
    box.style.cssText = `position:fixed;left:${l.x}px;top:${l.y}px;width:${l.w}px;` +
      `height:${l.h}px;outline:2px solid #e11d48;box-sizing:border-box`;
    const tag = document.createElement('span');
    tag.textContent = l.n;
    tag.style.cssText = 'position:absolute;left:-2px;top:-16px;background:#e11d48;color:#fff;' +
      'font:bold 11px/14px sans-serif;padding:0 3px;border-radius:2px';
    box.appendChild(tag);
    layer.appendChild(box);
  }
  document.documentElement.appendChild(layer);
}"""
ERASE_JS = "id => document.getElementById(id)?.remove()"


def boxes(nodes: list[Node], offset: tuple[float, float] = (0, 0)) -> dict[str, Any]:
    """ref → (node, x, y, w, h) in viewport pixels, iframe offsets added."""
    found: dict[str, Any] = {}
    for node in nodes:
        box = node.box()
        if node.ref is not None and box is not None:
            found[node.ref] = (node, box[0] + offset[0], box[1] + offset[1], box[2], box[3])
        found.update(boxes(node.children, inner_offset(node, offset)))
    return found


@TOOLS.tool("screenshot_annotated", family="output", gated=False, params=NoParams)
async def screenshot_annotated(session: Session, params: NoParams) -> dict[str, Any]:
    """A viewport PNG with numbered labels on the latest snapshot's refs, and the legend.

    Without an earlier snapshot of this page, an interactive one is taken first.
    """
    page = session.page
    latest = session.tab.snapshot if session.tab is not None else None
    placed = boxes(parse(await page.aria_snapshot(mode="ai", boxes=True)))
    refs = list(dict.fromkeys(PRINTED_REF.findall(latest.text))) if latest else []
    if not set(refs) & set(placed):  # none yet, or of a document the tab has left
        fresh = await remembered_snapshot(session, SnapshotParams(interactive=True))
        refs = list(dict.fromkeys(PRINTED_REF.findall(fresh.text)))
        placed = boxes(parse(await page.aria_snapshot(mode="ai", boxes=True)))
    width, height = await page.evaluate("[innerWidth, innerHeight]")
    labels: list[dict[str, float]] = []
    legend: list[dict[str, object]] = []
    for ref in refs:
        if ref not in placed or len(labels) == MAX_LABELS:
            continue
        node, x, y, w, h = placed[ref]
        if w <= 0 or h <= 0 or x >= width or y >= height or x + w <= 0 or y + h <= 0:
            continue
        n = len(labels) + 1
        labels.append({"n": n, "x": x, "y": y, "w": w, "h": h})
        legend.append({"n": n, "ref": f"@{ref}", "role": node.role, "name": node.name})
    await page.evaluate(DRAW_JS, [OVERLAY_ID, labels])
    try:
        async with screen_masks(page) as mask:
            data = await page.screenshot(type="png", mask=mask)
    finally:
        await page.evaluate(ERASE_JS, OVERLAY_ID)
    shot = binary(session, data, "image/png", "make the viewport smaller (set_viewport)")
    if session.tab is not None:  # its numbers stand for these refs: click 3
        session.tab.labels = Labels({int(str(e["n"])): str(e["ref"])[1:] for e in legend})
    return {**shot, "legend": legend, "unlabelled": len(refs) - len(legend)}
