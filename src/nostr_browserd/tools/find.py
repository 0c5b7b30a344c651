"""Semantic locators: find elements by role, text, label… and get refs, or act at once.

Each match comes back as a ref that later commands resolve (``click @e7``), with its role
and name.  Refs are read from a snapshot of each match: a scoped ai snapshot gives the
element's own ref (refs stay on their element), and one full snapshot afterwards puts the
page's whole ref table back.  With ``action`` the single match is handed to that tool
(click, fill, check…), so every check of that tool applies; several matches are AMBIGUOUS.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any, Literal

from playwright.async_api import Error as PlaywrightError
from playwright.async_api import Frame, Locator, Page
from pydantic import Field

from ..browser.masked import unfindable
from ..browser.refs import first_line
from ..browser.session import Session
from ..browser.snapshot import parse
from ..commands.params import SELECTOR_HELP
from ..commands.registry import Call, Params, Registry, ToolContext
from ..errors import BrowserdError, ErrorCode

TOOLS = Registry()
Action = Literal[
    "click",
    "dblclick",
    "hover",
    "focus",
    "fill",
    "type",
    "check",
    "uncheck",
    "select",
    "scroll_into_view",
]


class FindParams(Params):
    """What to do with the matches: list them, or act on the only one."""

    action: Action | None = Field(None, description="act on the single match with this tool")
    value: str | list[str] | None = Field(None, description="the action's value (fill, select…)")
    exact: bool = Field(False, description="match the whole text, case-sensitively")
    limit: int = Field(10, ge=1, le=50, description="matches to describe")


class FindText(FindParams):
    """The text to look for."""

    text: str = Field(min_length=1, max_length=1000)


class FindRole(FindParams):
    """An ARIA role and, optionally, the accessible name."""

    role: str = Field(pattern=r"^[a-z]{2,32}$", description="e.g. button, link, textbox")
    name: str | None = Field(None, max_length=1000, description="accessible name")


class FindSelector(FindParams):
    """A CSS selector whose matches are narrowed to one."""

    selector: str = Field(min_length=1, max_length=1000, description=SELECTOR_HELP)


class FindNth(FindSelector):
    """A CSS selector and which of its matches (0 is the first)."""

    n: int = Field(ge=0, le=10_000, description="0-based index among the matches")


def action_of(params: dict[str, Any]) -> list[Call]:
    """The call a find with these params hands its match to (for a policy to judge)."""
    action = params.get("action")
    return [(action, {})] if isinstance(action, str) else []


# A CSS path to one element, for matches the accessibility tree gives no node (and no ref).
CSS_PATH_JS = """el => {
  const parts = [];
  for (; el && el.nodeType === 1 && el !== document.documentElement; el = el.parentElement) {
    if (el.id && /^[A-Za-z][\\w-]*$/.test(el.id)) { parts.unshift('#' + el.id); break; }
    let n = 1;
    for (let s = el.previousElementSibling; s; s = s.previousElementSibling)
      if (s.tagName === el.tagName) n++;
    parts.unshift(`${el.tagName.toLowerCase()}:nth-of-type(${n})`);
  }
  return parts.join(' > ');
}"""


async def describe(page: Page, locator: Locator, limit: int) -> list[dict[str, Any]]:
    """Ref, role and name of the first ``limit`` matches; restores the page's ref table.

    A match without a node of its own in the accessibility tree (a span with a title, a
    hidden element) has no ref: it gets a CSS selector instead.
    """
    matches = []
    for i in range(limit):
        match = locator.nth(i)
        raw = ""
        with contextlib.suppress(PlaywrightError):  # gone or hidden meanwhile: no ref
            raw = await match.aria_snapshot(mode="ai", timeout=2000)
        nodes = parse(raw)
        node = nodes[0] if nodes else None
        if node is not None and node.ref is not None:
            matches.append({"ref": f"@{node.ref}", "role": node.role, "name": node.name})
        else:
            path = await match.evaluate(CSS_PATH_JS)
            matches.append({"ref": None, "selector": path, "note": "no ref: use the selector"})
    await page.aria_snapshot(mode="ai")  # scoped snapshots replaced the table; refill it
    return matches


async def found(
    registry: Registry, session: Session, locator: Locator, params: FindParams
) -> dict[str, Any]:
    """List the matches of ``locator``, then run ``params.action`` on the only one."""
    try:
        count = await locator.count()
    except PlaywrightError as exc:
        raise BrowserdError(ErrorCode.INVALID_PARAMS, first_line(exc)) from None
    if count == 0:
        raise BrowserdError(ErrorCode.ELEMENT_NOT_FOUND, "Nothing matches.")
    if params.action and count > 1:
        raise BrowserdError(
            ErrorCode.AMBIGUOUS,
            f"{count} elements match: narrow it (exact, name) or use find_first/find_nth.",
        )
    matches = await describe(session.page, locator, min(count, params.limit))
    result: dict[str, Any] = {"count": count, "matches": matches}
    if params.action:
        only = matches[0]
        args: dict[str, Any] = (
            {"ref": only["ref"]} if only["ref"] else {"selector": only["selector"]}
        )
        if params.value is not None:
            args["value"] = params.value
        tool, model = registry.validate(params.action, args)
        result["action"] = params.action
        result["result"] = await tool.run(registry, session, model)
    return result


Locate = Callable[[Page | Frame, Any], Locator]


def find_tool(
    name: str, params: type[FindParams], args: tuple[str, ...], locate: Locate, doc: str
) -> None:
    """Register one find_* tool: a params model and how it becomes a Playwright locator."""

    async def handler(session: Session, p: FindParams, ctx: ToolContext) -> dict[str, Any]:
        # Never matched on a value the vault filled: a search must not guess it by letters.
        locator = unfindable(locate(session.scope, p), session.page.context)
        return await found(ctx.registry, session, locator, p)

    handler.__doc__ = doc
    TOOLS.tool(name, family="find", gated=True, params=params, args=args, delegates=action_of)(
        handler
    )


def _by_text(method: str) -> Locate:
    """``scope.<method>(text, exact=…)``: the ``get_by_*`` locators that take a text."""
    return lambda scope, p: getattr(scope, method)(p.text, exact=p.exact)


find_tool(
    "find_role",
    FindRole,
    ("role", "*name"),
    lambda page, p: page.get_by_role(p.role, name=p.name, exact=p.exact),
    "Find elements by ARIA role (and accessible name); returns refs, or acts on the one.",
)
for _name, _method, _what in (
    ("find_text", "get_by_text", "text content"),
    ("find_label", "get_by_label", "label text"),
    ("find_placeholder", "get_by_placeholder", "placeholder"),
    ("find_alt", "get_by_alt_text", "alt text"),
    ("find_title", "get_by_title", "title attribute"),
):
    find_tool(
        _name,
        FindText,
        ("*text",),
        _by_text(_method),
        f"Find elements by {_what}; returns refs, or acts on the one match.",
    )
find_tool(
    "find_testid",
    FindText,
    ("*text",),
    lambda page, p: page.get_by_test_id(p.text),
    "Find elements by data-testid; returns refs, or acts on the one match.",
)
find_tool(
    "find_first",
    FindSelector,
    ("*selector",),
    lambda page, p: page.locator(p.selector).first,
    "The first element a CSS selector matches, as a ref; or act on it.",
)
find_tool(
    "find_last",
    FindSelector,
    ("*selector",),
    lambda page, p: page.locator(p.selector).last,
    "The last element a CSS selector matches, as a ref; or act on it.",
)
find_tool(
    "find_nth",
    FindNth,
    ("n", "*selector"),
    lambda page, p: page.locator(p.selector).nth(p.n),
    "The nth (0-based) element a CSS selector matches, as a ref; or act on it.",
)
