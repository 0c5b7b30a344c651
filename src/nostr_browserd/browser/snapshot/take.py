"""A snapshot from a page: Playwright's ai snapshot read, then built, rendered and cut.

:func:`render` is the pure path (tree → view → page); :func:`take` adds what only the page
knows: the viewport, password values to mask, which listboxes are ``<select>`` elements,
and the refs a selector's subtree starts at.
"""

from __future__ import annotations

import asyncio
import re
from urllib.parse import urlsplit

from playwright.async_api import Error as PlaywrightError
from playwright.async_api import Frame, Page

from ...errors import BrowserdError, ErrorCode
from ...heap import collector_paused
from ..masked import masked
from ..refs import alias, first_line, locate, parse_ref, resolve
from .pages import Rendered, cut, first_line_of, stale
from .printer import Options, Printer, Seen, shed_descriptions
from .seen import elide, seen
from .tree import find, parse, redact

# The listboxes among the refs that are <select multiple> elements, whose options
# ``select`` picks by label (a custom listbox's options are clicked, by their refs).
SELECT_JS = "e => e.tagName === 'SELECT'"


LISTBOX = re.compile(r"^ *- '?listbox\b.*?\[ref=((?:f\d+)?e\d+)\]", re.MULTILINE)


# Only a snapshot sent whole, and of at most this many lines, is kept to compare the next one
# with: the comparison costs about 2 ms a thousand lines, and a longer print is over the
# result cap (20,000 characters, some 500 lines) unless the cap was raised.
SEEN_LINES = 2_000


# A text field printed with its value: only then can a password be on show.
SHOWS_VALUE = re.compile(r"^ *- '?(?:textbox|searchbox)\b.*\]'?: ", re.MULTILINE)


def render(
    raw: str,
    options: Options,
    *,
    scopes: list[str] | None = None,
    secrets: set[str] | None = None,
    view: tuple[float, float, float, float] | None = None,
    selects: frozenset[str] = frozenset(),
    origin: str = "",
    before: Seen | None = None,
    navigated: bool = False,
) -> Rendered:
    """Print ``raw`` (an ai snapshot) as ``options`` ask, within ``options.max_chars``,
    with the whole print (``seen``) for the next snapshot of ``origin`` to compare with.

    ``scopes`` limits it to the subtrees under those refs; ``view`` (x, y, width, height)
    to nodes whose boxes meet it, for a snapshot taken with ``boxes=True``; ``selects``
    names the listboxes that are ``<select>`` elements (``select_refs``).  With ``before``
    (the last snapshot of the same site, same options) the lines it printed the same are
    left out (``seen.py``) from a snapshot that fits whole.
    """
    with collector_paused():  # tens of thousands of nodes, all alive until the print is done
        return _render(raw, options, scopes, secrets, view, selects, origin, before, navigated)


def _render(
    raw: str,
    options: Options,
    scopes: list[str] | None,
    secrets: set[str] | None,
    view: tuple[float, float, float, float] | None,
    selects: frozenset[str],
    origin: str,
    before: Seen | None,
    navigated: bool,
) -> Rendered:
    nodes = parse(raw)
    if scopes is not None:
        roots = [find(nodes, ref) for ref in scopes]
        if None in roots:
            raise stale(scopes[roots.index(None)])
        nodes = [root for root in roots if root is not None]
    if secrets:
        redact(nodes, secrets)
    printer = Printer(options, view, selects)
    if options.interactive:
        shed_descriptions(nodes)
        printer.flat(nodes, (0, 0))
    else:
        printer.tree(printer.tidy(nodes), 0, (0, 0))
    rendered = cut(printer, first_line_of(printer, nodes, options.start), options.max_chars)
    if options.start or rendered.truncated or len(printer.lines) > SEEN_LINES:
        return rendered
    rendered.seen = seen(printer, origin)
    if before is None or before.origin != origin:
        return rendered
    return elide(printer, rendered.seen, before, navigated)


PASSWORDS_JS = (
    "() => [...document.querySelectorAll('input[type=password]')].map(e => e.value).filter(Boolean)"
)


# Boxes are relative to the viewport, so the viewport is (0, 0, width, height).
VIEWPORT_JS = "() => [0, 0, window.innerWidth, window.innerHeight]"


async def password_values(page: Page) -> set[str]:
    """Current values of password fields in every frame, so snapshots can mask them."""
    values: set[str] = set()
    for frame in page.frames:
        try:
            values.update(await frame.evaluate(PASSWORDS_JS))
        except Exception:  # a frame navigating away has no values worth hiding
            continue
    return values


async def take(
    page: Page,
    options: Options,
    *,
    ref: str | None = None,
    selector: str | None = None,
    frame: Frame | None = None,
    before: Seen | None = None,
    navigated: bool = False,
) -> Rendered:
    """Snapshot ``page`` (optionally scoped to a ref or selector) and render it.

    With ``frame`` (a child frame chosen by frame_switch) the selector resolves there, and
    without a ref or selector the snapshot shows that frame only.  ``before`` and
    ``navigated`` are ``render``'s; the refs an elision carried over resolve from now on.
    """
    view = tuple(await page.evaluate(VIEWPORT_JS)) if options.viewport else None
    scopes = [resolve(page, parse_ref(ref))] if ref is not None else None
    if selector is not None or (frame is not None and ref is None):
        scopes = await selector_scope(frame or page, selector or "body")
    raw = await page.aria_snapshot(mode="ai", boxes=options.viewport or None)
    shows = SHOWS_VALUE.search(raw)
    secrets = await password_values(page) | masked(page.context) if shows else set()
    selects = await select_refs(page, raw) if options.interactive else frozenset()
    rendered = render(
        raw,
        options,
        scopes=scopes,
        secrets=secrets,
        view=view,
        selects=selects,
        origin=origin_of(page.url),
        before=before,
        navigated=navigated,
    )
    if rendered.seen is not None:
        alias(page, rendered.seen.aliases)
    return rendered


def origin_of(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


async def select_refs(page: Page, raw: str) -> frozenset[str]:
    """The refs of the listboxes in ``raw`` that are ``<select>`` elements."""

    async def is_select(ref: str) -> bool:
        # Counted first, which does not wait, as evaluate would for an element gone away
        # (evaluate_all, which does not wait either, finds nothing by aria-ref).
        locator = page.locator(f"aria-ref={ref}")
        try:
            return await locator.count() == 1 and await locator.evaluate(SELECT_JS)
        except PlaywrightError:  # it or its frame went away: printed as any listbox
            return False

    listboxes = LISTBOX.findall(raw)
    found = await asyncio.gather(*(is_select(ref) for ref in listboxes))
    return frozenset(ref for ref, yes in zip(listboxes, found, strict=True) if yes)


async def selector_scope(page: Page | Frame, selector: str) -> list[str]:
    """The refs at the top of the subtree ``selector`` names.

    A scoped ``aria_snapshot`` replaces the page's ref table, so we only read its top-level
    refs here and then print those subtrees out of a full snapshot, where every ref lives.
    """
    locator = await locate(page, selector=selector)
    try:
        scoped = await locator.aria_snapshot(mode="ai")
    except Exception as exc:
        raise BrowserdError(ErrorCode.ELEMENT_NOT_FOUND, first_line(exc)) from None
    refs = [n.ref for n in parse(scoped) if n.ref is not None]
    if not refs:
        raise BrowserdError(
            ErrorCode.ELEMENT_NOT_FOUND, f"{selector!r} holds nothing a snapshot shows."
        )
    return refs
