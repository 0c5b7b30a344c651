"""Find exactly one element by snapshot ref or CSS selector, and fail fast otherwise.

An unknown or stale ref would make Playwright wait for its whole timeout; counting
first turns that into ``STALE_REF`` in milliseconds.  A selector that matches several
elements is refused rather than guessed.  Playwright's css engine pierces open shadow
roots, so selectors reach inside web components.
"""

from __future__ import annotations

import re
from weakref import WeakKeyDictionary

from playwright.async_api import Error as PlaywrightError
from playwright.async_api import Frame, Locator, Page

from ..errors import BrowserdError, ErrorCode

REF = re.compile(r"^@?((?:f\d+)?e\d+)$")


def parse_ref(ref: str) -> str:
    """``"@e5"`` / ``"e5"`` / ``"f1e3"`` → the bare ref, or ``INVALID_PARAMS``."""
    match = REF.match(ref.strip())
    if not match:
        raise BrowserdError(
            ErrorCode.INVALID_PARAMS,
            f"{ref!r} is not a ref: refs look like @e5 or @f1e3, taken from a snapshot.",
        )
    return match.group(1)


# Per page: a ref a model read before the page navigated → the ref its element has now, for
# the lines a snapshot left out as the same as before (``snapshot/seen.py``).  Playwright
# gives each document of a page refs of its own (e5, f1e5, f2e5…), so an old ref that is an
# alias names nothing else.
_ALIASES: WeakKeyDictionary[Page, dict[str, str]] = WeakKeyDictionary()


def alias(page: Page, pairs: dict[str, str]) -> None:
    """From now on, each old ref of ``pairs`` resolves to its new ref on ``page``, and so
    does every older ref that resolved to one of them; the rest named the last document
    only, and are dropped."""
    if not pairs:
        return
    table = _ALIASES.get(page, {})
    _ALIASES[page] = {old: pairs[new] for old, new in table.items() if new in pairs} | pairs


def resolve(page: Page | Frame, ref: str) -> str:
    """The ref Playwright knows the element ``ref`` (a bare ref) by now."""
    owner = page.page if isinstance(page, Frame) else page
    return _ALIASES.get(owner, {}).get(ref, ref)


def looks_like_ref(token: str) -> bool:
    """Whether a bare word from the text grammar is a ref rather than a selector."""
    return bool(REF.match(token))


async def locate(
    page: Page | Frame, *, ref: str | None = None, selector: str | None = None
) -> Locator:
    """Exactly one element: ``STALE_REF``, ``ELEMENT_NOT_FOUND`` or ``AMBIGUOUS`` otherwise."""
    if (ref is None) == (selector is None):
        raise BrowserdError(ErrorCode.INVALID_PARAMS, "Give exactly one of ref or selector.")
    if ref is not None:
        bare = parse_ref(ref)
        locator = page.locator(f"aria-ref={resolve(page, bare)}")
        if await locator.count() != 1:
            raise BrowserdError(
                ErrorCode.STALE_REF,
                f"Ref @{bare} is not on the page any more: take a new snapshot.",
            )
        return locator
    assert selector is not None
    locator = page.locator(selector)
    try:
        count = await locator.count()
    except PlaywrightError as exc:
        raise BrowserdError(
            ErrorCode.INVALID_PARAMS, f"Selector {selector!r} does not parse: {first_line(exc)}"
        ) from None
    if count == 0:
        raise BrowserdError(
            ErrorCode.ELEMENT_NOT_FOUND,
            f"Nothing matches {selector!r}: take a snapshot and use a ref.",
        )
    if count > 1:
        raise BrowserdError(
            ErrorCode.AMBIGUOUS,
            f"{selector!r} matches {count} elements: make it specific or use a ref.",
        )
    return locator


def first_line(exc: BaseException) -> str:
    """Playwright messages carry a call log; the first line is the part worth showing."""
    return str(getattr(exc, "message", exc)).strip().split("\n")[0]
