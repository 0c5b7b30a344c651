"""What changed: between two snapshots of a tab, two screenshots, or two addresses.

diff_snapshot compares with the previous snapshot of the same tab (taken the same way by
default) and prints a compact unified diff.  diff_screenshot counts changed pixels against
the last screenshot (or a given image) and draws them in red; the images are decoded and
compared on a canvas in a blank page of the browser's own, outside every session, so no
image library is needed.  diff_url loads addresses in a scratch tab that it closes again.
"""

from __future__ import annotations

import base64
import binascii
import difflib
import weakref
from typing import Any

from playwright.async_api import Browser, Page
from pydantic import Field

from ..browser.masked import screen_masks
from ..browser.session import Session
from ..browser.snapshot import Options, take
from ..commands.registry import Params, Registry
from ..errors import BrowserdError, ErrorCode
from .navigate import goto
from .output import binary
from .read import SnapshotParams, remembered_snapshot, snapshot_tool

TOOLS = Registry()
CANVAS_PAGES: weakref.WeakKeyDictionary[Browser, Page] = weakref.WeakKeyDictionary()


def unified(before: str, after: str) -> dict[str, Any]:
    """A unified diff with one line of context, and how many lines came and went."""
    lines = list(difflib.unified_diff(before.splitlines(), after.splitlines(), n=1, lineterm=""))[
        2:
    ]
    added = sum(1 for line in lines if line.startswith("+"))
    removed = sum(1 for line in lines if line.startswith("-"))
    return {"changed": bool(lines), "added": added, "removed": removed, "diff": "\n".join(lines)}


@snapshot_tool(TOOLS, "diff_snapshot", "diff")
async def diff_snapshot(session: Session, params: SnapshotParams) -> dict[str, Any]:
    """What changed in this tab's snapshot since the previous one (+ added, - removed lines).

    With no options it snapshots the way the previous snapshot was taken.
    """
    previous = session.tab.snapshot if session.tab is not None else None
    if previous is not None and not params.model_fields_set:
        params = SnapshotParams(**previous.params)
    rendered = await remembered_snapshot(session, params)
    if previous is None:
        return {
            "changed": False,
            "snapshot": rendered.text,
            "note": "No earlier snapshot in this tab: this one is the baseline for the next diff.",
        }
    result = unified(previous.text, rendered.text)
    if previous.params != params.model_dump():
        result["note"] = "The previous snapshot was taken with other options."
    return result


class DiffUrlParams(Params):
    """One address to compare with the current page, or two to compare with each other."""

    url: str = Field(min_length=1, max_length=2000, description="address to load and compare")
    other: str | None = Field(None, max_length=2000, description="compare url with this one")
    interactive: bool = Field(False, description="compare interactive snapshots (-i)")


async def scratch_snapshot(session: Session, url: str, options: Options) -> str:
    """Load ``url`` in a new tab of this session, snapshot it, close it, restore the tab."""
    active = session.active_tab
    tab, page = await session.new_tab()
    try:
        await goto(session, page, url)
        return (await take(page, options)).text
    finally:
        await page.close()
        session.forget(tab)
        if active in session.tabs:
            session.switch(active)


@TOOLS.tool(
    "diff_url", family="diff", gated=True, params=DiffUrlParams, args=("url", "other"), sends=True
)
async def diff_url(session: Session, params: DiffUrlParams) -> dict[str, Any]:
    """Compare the snapshots of two addresses, or of the current page and an address.

    The addresses load in a scratch tab (with this session's cookies) that is closed after.
    """
    options = Options(interactive=params.interactive, max_chars=session.config.result_cap)
    if params.other is None:
        left, before = session.page.url, (await take(session.page, options)).text
    else:
        left, before = params.other, await scratch_snapshot(session, params.other, options)
    after = await scratch_snapshot(session, params.url, options)
    return {"left": left, "right": params.url, **unified(before, after)}


class DiffScreenshotParams(Params):
    """The image to compare with (default: this tab's last screenshot) and a tolerance."""

    baseline: str | None = Field(None, description="base64 PNG or JPEG (default: last screenshot)")
    threshold: int = Field(16, ge=0, le=255, description="per-channel difference that counts")


COMPARE_JS = """async ([a, b, threshold]) => {
  const load = src => new Promise((ok, fail) => {
    const image = new Image();
    image.onload = () => ok(image);
    image.onerror = () => fail(new Error('not an image'));
    image.src = src;
  });
  const [x, y] = await Promise.all([load(a), load(b)]);
  const w = Math.max(x.width, y.width), h = Math.max(x.height, y.height);
  const pixels = image => {
    const g = new OffscreenCanvas(w, h).getContext('2d');
    g.drawImage(image, 0, 0);
    return g.getImageData(0, 0, w, h).data;
  };
  const p = pixels(x), q = pixels(y);
  const out = new OffscreenCanvas(w, h), g = out.getContext('2d'), d = g.createImageData(w, h);
  let changed = 0;
  for (let i = 0; i < p.length; i += 4) {
    const delta = Math.max(Math.abs(p[i] - q[i]), Math.abs(p[i + 1] - q[i + 1]),
                           Math.abs(p[i + 2] - q[i + 2]), Math.abs(p[i + 3] - q[i + 3]));
    if (delta > threshold) {
      changed++;
      d.data.set([255, 0, 0, 255], i);
    } else {
      const faded = 255 - (255 - (q[i] + q[i + 1] + q[i + 2]) / 3) / 4;
      d.data.set([faded, faded, faded, 255], i);
    }
  }
  g.putImageData(d, 0, 0);
  const bytes = new Uint8Array(await (await out.convertToBlob({type: 'image/png'})).arrayBuffer());
  let text = '';
  for (let i = 0; i < bytes.length; i += 32768)
    text += String.fromCharCode.apply(null, bytes.subarray(i, i + 32768));
  return {changed, width: w, height: h, resized: x.width !== y.width || x.height !== y.height,
          png: btoa(text)};
}"""


def data_url(data: bytes) -> str:
    mime = "image/jpeg" if data[:2] == b"\xff\xd8" else "image/png"
    return f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"


async def canvas_page(session: Session) -> Page:
    """A blank page in a context of its own (no session's cookies), kept per browser."""
    browser = session.main_context().browser
    assert browser is not None
    page = CANVAS_PAGES.get(browser)
    if page is None or page.is_closed():
        page = CANVAS_PAGES[browser] = await browser.new_page()
    return page


@TOOLS.tool(
    "diff_screenshot", family="diff", gated=False, params=DiffScreenshotParams, args=("baseline",)
)
async def diff_screenshot(session: Session, params: DiffScreenshotParams) -> dict[str, Any]:
    """Share of pixels changed since the last screenshot (or a given one), with an image of them.

    Changed pixels are red on a faded copy of the new picture, which becomes the baseline.
    """
    before: bytes | None
    if params.baseline is not None:
        try:
            before = base64.b64decode(params.baseline, validate=True)
        except binascii.Error:
            raise BrowserdError(ErrorCode.INVALID_PARAMS, "baseline is not base64.") from None
    else:
        before = session.tab.screenshot if session.tab is not None else None
        if not before:
            raise BrowserdError(
                ErrorCode.INVALID_PARAMS,
                "No earlier screenshot in this tab: take one, or pass baseline (base64).",
            )
    async with screen_masks(session.page) as mask:
        after = await session.page.screenshot(type="png", mask=mask)
    canvas = await canvas_page(session)
    try:
        compared = await canvas.evaluate(
            COMPARE_JS, [data_url(before), data_url(after), params.threshold]
        )
    except Exception as exc:
        if "not an image" not in str(exc):
            raise
        raise BrowserdError(
            ErrorCode.INVALID_PARAMS, "The baseline is not a PNG or JPEG."
        ) from None
    if session.tab is not None:
        session.tab.screenshot = after
    total = compared["width"] * compared["height"]
    image = binary(
        session, base64.b64decode(compared["png"]), "image/png", "use a smaller viewport"
    )
    return {
        "changed_ratio": round(compared["changed"] / total, 6) if total else 0.0,
        "changed_pixels": compared["changed"],
        "size": [compared["width"], compared["height"]],
        "resized": compared["resized"],
        **image,
    }
