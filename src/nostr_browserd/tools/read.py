"""Reading the page: snapshot, text, HTML, attributes, URL and title.  All free."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import Field

from ..browser.delta import compare
from ..browser.session import Session
from ..browser.snapshot import Options, Rendered, take
from ..browser.tab import Snapshot
from ..commands.params import OptionalTarget, Target
from ..commands.registry import Handler, NoParams, Registry
from ..errors import BrowserdError, ErrorCode

TOOLS = Registry()


class SnapshotParams(OptionalTarget):
    """What the snapshot shows; ``ref``/``selector`` scope it to one subtree."""

    interactive: bool = Field(False, description="only elements one can act on, one per line")
    compact: bool = Field(True, description="drop unnamed wrappers (false: full structure)")
    depth: int | None = Field(None, ge=1, description="levels of the tree to print")
    viewport: bool = Field(False, description="only what is inside the visible viewport")
    urls: bool = Field(False, description="print link targets (/url: lines)")
    text_limit: int = Field(80, ge=0, description="characters of prose per line, 0 for all")
    max_chars: int | None = Field(None, ge=500, description="cut the snapshot at this size")
    start: str | None = Field(
        None,
        pattern=r"^(@?(f\d+)?e\d+|[1-9]\d*)$",
        description="begin at this ref's line or line number: the next page of a cut snapshot",
    )


class SnapshotToolParams(SnapshotParams):
    """A snapshot's options, and whether to send only what changed since the last one."""

    delta: bool = Field(
        False,
        description="only what changed since this tab's last snapshot (same options), "
        "with the same refs; the full snapshot when there is none or the page navigated",
    )
    full: bool = Field(
        False,
        description="print the lines the last snapshot of this site showed the same too "
        "(they are left out by default, and their refs still work)",
    )


FLAGS = {
    "i": "interactive",
    "c": "compact",
    "d": "depth",
    "s": "selector",
    "v": "viewport",
}


def snapshot_tool(
    registry: Registry, name: str, family: str, params: type[SnapshotParams] = SnapshotParams
) -> Callable[[Handler], Handler]:
    """Register a free tool that takes a snapshot's options: snapshot and diff_snapshot."""
    return registry.tool(
        name, family=family, gated=False, params=params, args=("target",), flags=FLAGS
    )


@snapshot_tool(TOOLS, "snapshot", "read", SnapshotToolParams)
async def snapshot(session: Session, params: SnapshotToolParams) -> dict[str, Any]:
    """The page as an accessibility tree with refs (@e5) to act on; -i for actionable only.

    Refs stay valid until the element changes role or name or the page navigates.
    --delta sends only what changed since this tab's last snapshot.  After a navigation,
    lines the last snapshot of the site showed the same (its header, its navigation) print
    as one, and their old refs still work; --full prints them.
    """
    previous = session.tab.snapshot if session.tab is not None else None
    rendered = await remembered_snapshot(session, params, elide=not params.full)
    full: dict[str, Any] = {"snapshot": rendered.text, "refs": rendered.refs}
    if rendered.truncated:  # said only when cut, as other reads do
        full |= {"truncated": True, "next": rendered.next}
    if not params.delta:
        return full
    why = no_delta(previous, session.tab.snapshot if session.tab is not None else None)
    change = compare(previous.text, rendered.text) if why is None and previous else None
    if change is None or len(change.text) >= len(rendered.text):
        return {
            **full,
            "delta": False,
            "note": f"The full snapshot: {why or 'it is shorter than what changed'}.",
        }
    return {"snapshot": change.text, "refs": change.refs, "delta": True}


def no_delta(previous: Snapshot | None, current: Snapshot | None) -> str | None:
    """Why ``current`` cannot be sent as a delta from ``previous``, or None when it can."""
    if previous is None or current is None:
        return "this tab has no earlier snapshot to compare with"
    if current.document is None or previous.document != current.document:
        return "the page navigated since this tab's last snapshot, and its refs are new"
    if previous.frame is not current.frame:
        return "the last snapshot was of another frame"
    if previous.params != current.params:
        return "the last snapshot was taken with other options"
    if previous.truncated or current.truncated:
        return "a snapshot cut into pages is sent whole"
    return None


async def remembered_snapshot(
    session: Session, params: SnapshotParams, *, elide: bool = False
) -> Rendered:
    """Take a snapshot of the active tab (or its chosen frame) and keep it for the diffs;
    with ``elide``, leave out the lines the last one of the same site showed the same."""
    cap = session.config.result_cap - 1000
    options = Options(
        interactive=params.interactive,
        compact=params.compact,
        depth=params.depth,
        urls=params.urls,
        text_limit=params.text_limit,
        viewport=params.viewport,
        max_chars=min(params.max_chars or cap, cap),
        start=params.start,
    )
    page, tab = session.page, session.tab
    frame = tab.frame if tab is not None else None
    document = tab.document if tab is not None else None
    kept = SnapshotParams.model_fields.keys()  # the options, not how it is sent (delta)
    chosen = params.model_dump(include=set(kept))
    last = tab.snapshot if tab is not None else None
    alike = last is not None and last.params == chosen and last.frame is None and frame is None
    before = last.seen if elide and last is not None and alike and not params.has_target else None
    navigated = last is None or last.document is None or last.document != document
    rendered = await take(
        page,
        options,
        ref=params.ref,
        selector=params.selector,
        frame=frame,
        before=before,
        navigated=navigated,
    )
    if tab is not None:
        tab.snapshot = Snapshot(
            chosen,
            rendered.text,
            document=document if document == tab.document else None,
            frame=frame,
            truncated=rendered.truncated,
            seen=rendered.seen,
        )
    return rendered


class GetHtmlParams(OptionalTarget):
    """An element (or the whole page) and whether to include the element's own tag."""

    outer: bool = Field(False, description="include the element's own tag")


# Serialises without password values: a clone with every password field's value blanked.
HTML_JS = """(el, outer) => {
  const root = el || document.documentElement;
  const copy = root.cloneNode(true);
  const fields = copy.matches?.('input[type=password]') ? [copy] : [];
  fields.push(...copy.querySelectorAll('input[type=password]'));
  fields.forEach(f => f.hasAttribute('value') && f.setAttribute('value', ''));
  return (outer || !el) ? copy.outerHTML : copy.innerHTML;
}"""


@TOOLS.tool("get_text", family="read", gated=False, params=OptionalTarget, args=("target",))
async def get_text(session: Session, params: OptionalTarget) -> dict[str, Any]:
    """The visible text of one element, or of the whole page without a target."""
    if params.has_target:
        locator = await session.locate(**params.target())
        return {"text": await locator.inner_text()}
    return {"text": await session.scope.inner_text("body")}


@TOOLS.tool("get_html", family="read", gated=False, params=GetHtmlParams, args=("target",))
async def get_html(session: Session, params: GetHtmlParams) -> dict[str, Any]:
    """The HTML inside one element (outer: with its tag), or of the whole page."""
    if params.has_target:
        locator = await session.locate(**params.target())
        return {"html": await locator.evaluate(HTML_JS, params.outer)}
    return {"html": await session.scope.evaluate(f"({HTML_JS})(null, true)")}


class GetAttrParams(Target):
    """An element and the attribute to read."""

    name: str = Field(min_length=1, description="attribute name, e.g. href")


@TOOLS.tool("get_attr", family="read", gated=False, params=GetAttrParams, args=("target", "name"))
async def get_attr(session: Session, params: GetAttrParams) -> dict[str, Any]:
    """One attribute of one element (null when absent)."""
    locator = await session.locate(**params.target())
    if params.name.lower() == "value" and await locator.get_attribute("type") == "password":
        raise BrowserdError(ErrorCode.REFUSED, "A password field's value is never returned.")
    return {"name": params.name, "value": await locator.get_attribute(params.name)}


@TOOLS.tool("get_url", family="read", gated=False)
async def get_url(session: Session, params: NoParams) -> dict[str, Any]:
    """The active tab's address."""
    return {"url": session.page.url}


@TOOLS.tool("get_title", family="read", gated=False)
async def get_title(session: Session, params: NoParams) -> dict[str, Any]:
    """The active tab's title."""
    return {"title": await session.page.title()}
