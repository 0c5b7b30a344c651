"""Values a reply must never show: what the credential vault filled into a page.

``fill_credential`` remembers each value it filled for its browser context, before the value
is on the page (so do ``fill`` and ``type`` with ``secret``, for what they typed).  The page
may then copy it anywhere (its text, an attribute, its title, a React ``value`` attribute),
so every way back out is closed by what is remembered here:

- every reply, error and ask model request is scrubbed of it (``redact.scrub``, in
  ``commands.protocol.run`` and the ask loop);
- screenshots mask each element that shows it (``screen_masks``), a PDF is refused while the
  page shows it (``shows_filled``), and a text search never matches it (``unfindable``), so
  a search cannot be used to guess it a letter at a time;
- a recording paints over the elements whose text shows it (``text_boxes``), as over the
  fields that hold it (``mask_boxes``);
- a download that holds it is deleted and refused (``holds_filled``);
- the readers of field values (``snapshot``, ``get_value``) mask a field that holds one.

The memory dies with the context, which is where the value lives.
"""

from __future__ import annotations

import contextlib
import re
import weakref
from collections.abc import AsyncIterator, Iterable

from playwright.async_api import BrowserContext, Frame, Locator, Page
from playwright.async_api import Error as PlaywrightError

from ..redact import spellings
from ..vault.entry import origin_of

_FILLED: weakref.WeakKeyDictionary[BrowserContext, set[str]] = weakref.WeakKeyDictionary()
# Each value's own origins: only a frame on one of them already holds the value, so only such
# a frame is ever sent it to look for (a frame elsewhere could hook what looks, and read it).
_HOMES: weakref.WeakKeyDictionary[BrowserContext, dict[str, frozenset[str]]] = (
    weakref.WeakKeyDictionary()
)
# Marks, for one capture, the elements whose value or attributes hold a filled value.
MARK = "data-nbd-vault-mask"
# The number of elements (and shadow roots) that show a value, by text, value or attribute;
# with a mark, the ones holding it in a value or an attribute are marked for the mask.
SHOWN_JS = """([mark, values]) => {
  const holds = s => typeof s === 'string' && values.some(v => s.includes(v));
  let shown = 0;
  const walk = root => {
    if (holds((root.documentElement ?? root).textContent)) shown++;
    for (const el of root.querySelectorAll('*')) {
      if (holds(el.value) || [...el.attributes].some(a => holds(a.value))) {
        shown++;
        if (mark) el.setAttribute(mark, '');
      }
      if (el.shadowRoot) walk(el.shadowRoot);
    }
  };
  walk(document);
  return shown;
}"""
UNMARK_JS = """mark => {
  const walk = root => {
    for (const el of root.querySelectorAll('*')) {
      el.removeAttribute(mark);
      if (el.shadowRoot) walk(el.shadowRoot);
    }
  };
  walk(document);
}"""


def remember(context: BrowserContext, value: str, origins: Iterable[str] = ()) -> None:
    """``value`` was filled into a page of ``context`` on one of ``origins``: mask it from
    now on."""
    _FILLED.setdefault(context, set()).add(value)
    homes = _HOMES.setdefault(context, {})
    homes[value] = homes.get(value, frozenset()) | frozenset(origins)


def masked(context: BrowserContext) -> set[str]:
    """Every value filled from the vault into ``context``."""
    return _FILLED.get(context, set())


def filled_in(contexts: Iterable[BrowserContext]) -> frozenset[str]:
    """Every value filled from the vault into any of ``contexts`` (a session's windows)."""
    return frozenset(value for context in contexts for value in masked(context))


def holds_filled(data: bytes, contexts: Iterable[BrowserContext]) -> bool:
    """Whether ``data`` (a file a page made) holds a value filled into any of ``contexts``,
    in any spelling a reply would mask (``redact.spellings``)."""
    return any(form.encode() in data for value in filled_in(contexts) for form in spellings(value))


def _held_in(frame: Frame, values: list[str]) -> list[str]:
    """The ``values`` ``frame`` may be asked about: those filled on its own origin."""
    homes = _HOMES.get(frame.page.context, {})
    here = origin_of(frame.url)
    return [value for value in values if here is not None and here in homes.get(value, ())]


def _patterns(values: Iterable[str]) -> list[re.Pattern[str]]:
    return [re.compile(re.escape(value)) for value in sorted(values)]


def unfindable(locator: Locator, context: BrowserContext) -> Locator:
    """``locator`` without the elements whose text holds a value filled into ``context``."""
    for pattern in _patterns(masked(context)):
        locator = locator.filter(has_not_text=pattern)
    return locator


@contextlib.asynccontextmanager
async def screen_masks(page: Page) -> AsyncIterator[list[Locator]]:
    """Locators for a capture's ``mask``: every element of every frame that shows a value
    filled into the page's context, in its text, its value or an attribute.

    Text is matched by Playwright's own locators, in a world the page's scripts cannot
    reach; values and attributes are read by a script in the page, so only a frame on the
    value's own origin, which has it already, is asked about it.

    Playwright paints the masks over the elements at the capture, wherever a full page or
    element capture puts them; the marks go again afterwards.
    """
    values = sorted(masked(page.context))
    if not values:
        yield []
        return
    frames = list(page.frames)
    for frame in frames:
        held = _held_in(frame, values)
        with contextlib.suppress(PlaywrightError):  # a frame navigating away shows nothing
            if held:
                await frame.evaluate(SHOWN_JS, [MARK, held])
    try:
        yield [
            locator
            for frame in frames
            for locator in (
                frame.locator(f"[{MARK}]"),
                *(frame.get_by_text(pattern) for pattern in _patterns(values)),
            )
        ]
    finally:
        for frame in frames:
            with contextlib.suppress(PlaywrightError):
                await frame.evaluate(UNMARK_JS, MARK)


async def text_boxes(page: Page, limit: int = 20) -> list[tuple[float, float, float, float]]:
    """The boxes (x, y, width, height in the viewport's CSS pixels) of the elements whose text
    shows a filled value, in every frame: for a recording, which paints over them itself.

    Found by Playwright's own locators, so no script of the page sees what is looked for.
    """
    boxes = []
    patterns = _patterns(masked(page.context))
    for frame in page.frames if patterns else []:
        for pattern in patterns:
            shown = frame.get_by_text(pattern)
            with contextlib.suppress(PlaywrightError):  # gone meanwhile: the next look finds it
                for index in range(min(await shown.count(), limit)):
                    box = await shown.nth(index).bounding_box(timeout=1000)
                    if box is not None:
                        boxes.append((box["x"], box["y"], box["width"], box["height"]))
    return boxes


async def shows_filled(page: Page) -> bool:
    """Whether any frame of ``page`` shows a value filled into its context."""
    values = sorted(masked(page.context))
    if not values:
        return False
    for frame in page.frames:
        held = _held_in(frame, values)
        with contextlib.suppress(PlaywrightError):
            if held and await frame.evaluate(SHOWN_JS, [None, held]):
                return True
        with contextlib.suppress(PlaywrightError):  # elsewhere, looked for in Playwright's world
            for pattern in _patterns(values):
                if await frame.get_by_text(pattern).count():
                    return True
    return False
