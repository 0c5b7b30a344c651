"""Where a page shows a secret now: the boxes a recording paints over in every frame.

A field counts when it is a password field, or when its value is one the session must never
show (a vault value, a ``--secret`` fill: :mod:`.masked`).  The page reports its fields'
boxes and values; the comparison with the secrets is made here, so no secret is sent into
the page to look for.  An element whose text shows one (a page that copied it) is found by
Playwright's own locators, which the page's scripts cannot see (``masked.text_boxes``).
"""

from __future__ import annotations

from playwright.async_api import Page

from .frames import Box
from .masked import masked, text_boxes

FIELDS_JS = """() => {
  const out = [];
  for (const el of document.querySelectorAll('input, textarea, [contenteditable]')) {
    const r = el.getBoundingClientRect();
    if (r.width < 1 || r.height < 1 || r.bottom < 0 || r.top > innerHeight) continue;
    const value = el.isContentEditable ? el.innerText : String(el.value ?? '');
    out.push([r.x, r.y, r.width, r.height, el.type === 'password', value.slice(0, 4096)]);
  }
  return [innerWidth, out];
}"""


async def secret_boxes(page: Page) -> tuple[float, list[Box]]:
    """The viewport's CSS width, and the box of every field on it that holds a secret.

    With no secret in the session, nothing to ask: a password field draws only dots.
    """
    secrets = masked(page.context)
    if not secrets:
        return 0.0, []
    width, fields = await page.evaluate(FIELDS_JS)
    boxes = [
        (x, y, w, h)
        for x, y, w, h, password, value in fields
        if password or (value and any(secret in value for secret in secrets))
    ]
    return float(width), boxes + await text_boxes(page)  # and where the page copied one
