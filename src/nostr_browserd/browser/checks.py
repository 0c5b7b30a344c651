"""Inspect before acting, compare after: the checks behind click, fill and type.

Every refusal fires on an inspection made before anything could change the page, and a
state-changing action is judged by what it did, not by whether Playwright returned.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Any

from playwright.async_api import Frame, Locator, Page

from ..errors import BrowserdError, ErrorCode

# URL, title, a mutation counter and every field's state: enough to tell "nothing happened".
# Open shadow roots are observed too, since MutationObserver does not see into them.
FINGERPRINT_JS = """() => {
  const seen = window.__nbdSeen || (window.__nbdSeen = {n: 0, roots: new WeakSet()});
  const roots = [document];
  for (let i = 0; i < roots.length; i++)
    for (const el of roots[i].querySelectorAll('*')) if (el.shadowRoot) roots.push(el.shadowRoot);
  for (const root of roots) {
    if (seen.roots.has(root)) continue;
    seen.roots.add(root);
    new MutationObserver(r => { seen.n += r.length; }).observe(root,
      {subtree: true, childList: true, attributes: true, characterData: true});
  }
  const fields = roots.flatMap(r => [...r.querySelectorAll('input, select, textarea')])
    .map(e => e.type === 'password' ? String(e.value.length) + e.checked
                                    : e.value + e.checked + e.selectedIndex);
  return {url: location.href, title: document.title, mutations: seen.n,
          fields: fields.join('\\u0000'), focus: document.activeElement?.outerHTML.slice(0, 200),
          scroll: [scrollX, scrollY].join()};
}"""

# What covers the element's centre, if anything: named so the caller can deal with it.
COVER_JS = """el => {
  el.scrollIntoView({block: 'center', inline: 'center', behavior: 'instant'});
  const r = el.getBoundingClientRect();
  if (r.width === 0 || r.height === 0) return {hidden: true};
  const x = r.left + r.width / 2, y = r.top + r.height / 2;
  const root = el.getRootNode();
  let hit = (root.elementFromPoint ? root : document).elementFromPoint(x, y);
  const inside = n => {
    for (; n; n = n.parentNode || n.host) if (n === el) return true;
    return false;
  };
  if (!hit || inside(hit)) return null;
  if (el.labels && [...el.labels].some(l => l.contains(hit))) return null;
  const text = (hit.innerText || '').trim().slice(0, 60);
  const cls = String(hit.className).slice(0, 60);
  return {tag: hit.tagName.toLowerCase(), id: hit.id, cls, text};
}"""

FIELD_JS = """el => ({
  tag: el.tagName.toLowerCase(), type: (el.type || '').toLowerCase(),
  editable: el.isContentEditable,
  disabled: !!el.disabled || el.getAttribute('aria-disabled') === 'true',
  readonly: !!el.readOnly, maxlength: el.maxLength ?? -1, value: el.value ?? el.innerText ?? ''
})"""

TEXT_TYPES = frozenset(
    [
        "text",
        "email",
        "number",
        "tel",
        "url",
        "search",
        "password",
        "date",
        "datetime-local",
        "month",
        "week",
        "time",
        "color",
        "range",
    ]
)


async def fingerprint(page: Page, frame: Frame | None = None) -> dict[str, Any] | None:
    """The observable state of the page and of ``frame`` (the target's, when not the main
    frame), or None while the page is between documents."""
    frames = [page.main_frame] + ([frame] if frame and frame != page.main_frame else [])
    state: dict[str, Any] = {}
    try:
        for prefix, each in zip(("", "frame "), frames, strict=False):
            values = await asyncio.wait_for(each.evaluate(FINGERPRINT_JS), 5)
            state.update({prefix + key: value for key, value in values.items()})
    except Exception:
        return state or None
    return state


LABELS = {
    "url": "url changed",
    "title": "title changed",
    "mutations": "page content changed",
    "fields": "field values changed",
    "focus": "focus moved",
    "scroll": "page scrolled",
}


async def changes(
    page: Page,
    before: dict[str, Any] | None,
    frame: Frame | None = None,
    settle: Callable[[], Awaitable[object]] | None = None,
) -> list[str]:
    """What differs from ``before``: re-checked a few frames later for late handlers.

    ``settle`` is awaited before each look: it waits for a page the action opened to load
    (``NavigationWatch.settle``), so that a late handler's navigation is seen loaded too.
    """
    for delay in (0, 0.05, 0.15, 0.3):
        await asyncio.sleep(delay)
        if settle is not None:
            await settle()
        if before is None:
            return ["page reloaded"]
        after = await fingerprint(page, frame)
        if after is None:
            with contextlib.suppress(Exception):
                await page.wait_for_load_state("load", timeout=5000)
            return ["navigated"]
        reasons = []
        for key, value in before.items():
            if after.get(key) != value:
                name = key.removeprefix("frame ")
                label = LABELS[name] + (" in the frame" if name != key else "")
                if label not in reasons:
                    reasons.append(label)
        if reasons:
            return reasons
    return []


async def owner_frame(locator: Locator) -> Frame | None:
    """The frame an element lives in (to watch it as well as the page)."""
    handle = await locator.element_handle()
    return await handle.owner_frame() if handle else None


async def refuse_if_covered(locator: Locator) -> None:
    """Name the element that sits on top of the target's centre instead of clicking it."""
    cover = await locator.evaluate(COVER_JS)
    if cover is None:
        return
    if cover.get("hidden"):
        raise BrowserdError(ErrorCode.REFUSED, "The element has no size on screen: not clicked.")
    name = cover["tag"] + (f"#{cover['id']}" if cover["id"] else "")
    if cover["cls"]:
        name += "." + ".".join(cover["cls"].split())
    text = f' ("{cover["text"]}")' if cover["text"] else ""
    raise BrowserdError(
        ErrorCode.REFUSED,
        f"Not clicked: another element covers it: {name}{text}. Close or scroll past that first.",
    )


async def editable_field(locator: Locator, *, secret: bool) -> dict[str, Any]:
    """Refuse anything a person could not type into; returns the inspection."""
    info: dict[str, Any] = await locator.evaluate(FIELD_JS)
    kind = info["type"] if info["tag"] == "input" else info["tag"]
    if not (info["editable"] or info["tag"] == "textarea" or kind in TEXT_TYPES):
        raise BrowserdError(ErrorCode.REFUSED, f"Not a text field ({kind}): nothing typed.")
    if info["disabled"]:
        raise BrowserdError(ErrorCode.REFUSED, "The field is disabled: a person could not edit it.")
    if info["readonly"]:
        raise BrowserdError(
            ErrorCode.REFUSED, "The field is read-only: a person could not edit it."
        )
    if kind == "password" and not secret:
        raise BrowserdError(
            ErrorCode.REFUSED,
            "This is a password field: pass secret=true (--secret) to fill it on purpose.",
        )
    info["password"] = kind == "password"
    return info


async def multi_control(
    locator: Locator, script: str, *, count: int, noun: str, item: str, other: str
) -> dict[str, Any]:
    """Inspect a control that takes one or several items (a <select>, a file input).

    ``script`` returns ``{"multiple", "disabled", …}`` or null for any other element, which
    is refused with ``other``; so is a disabled control, and several items for a single one.
    """
    info: dict[str, Any] | None = await locator.evaluate(script)
    if info is None:
        raise BrowserdError(ErrorCode.REFUSED, other)
    if info["disabled"]:
        raise BrowserdError(
            ErrorCode.REFUSED, f"The {noun} is disabled: a person could not use it."
        )
    if count > 1 and not info["multiple"]:
        raise BrowserdError(ErrorCode.INVALID_PARAMS, f"This {noun} takes one {item}, not several.")
    return info


def check_length(info: dict[str, Any], length: int) -> None:
    """Refuse text the page would silently cut at its maxlength."""
    limit = info["maxlength"]
    if limit is not None and limit >= 0 and length > limit:
        raise BrowserdError(
            ErrorCode.REFUSED,
            f"The text is {length} characters; the field takes at most {limit}: nothing typed.",
        )
