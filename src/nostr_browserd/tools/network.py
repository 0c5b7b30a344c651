"""The network of the active tab: what it requested, one request in detail, and routes
that block or answer requests by URL pattern.

Requests are the active tab's last 100 (91 to 100 once it made more), as Playwright's
driver keeps them, asked for when listed (``browser.requestlog``); an id is given when a
request is first listed.  Details never carry secrets: the values of Authorization, Cookie,
Set-Cookie and the like are redacted.  Routes belong to the active tab's window
(BrowserContext) and last until unrouted.
"""

from __future__ import annotations

import weakref
from typing import Any, Literal

from playwright.async_api import BrowserContext, Request, Route
from pydantic import Field, model_validator

from ..browser.requestlog import KEPT, may_have_dropped, size, summary
from ..browser.session import Session
from ..commands.registry import Params, Registry
from ..errors import BrowserdError, ErrorCode
from ..redact import redact_headers

TOOLS = Registry()
BODY_MAX = 10_000
TEXT_TYPES = ("text/", "json", "javascript", "xml", "html", "css", "urlencoded")
# Per window: pattern → the handler registered for it, so unroute removes exactly that.
ROUTES: weakref.WeakKeyDictionary[BrowserContext, dict[str, Any]] = weakref.WeakKeyDictionary()


class RequestsParams(Params):
    """Filters, and how many of the newest matching requests to list."""

    url: str | None = Field(None, max_length=2000, description="only URLs containing this")
    type: str | None = Field(
        None, pattern=r"^[a-z]{2,20}$", description="resource type: document, script, xhr, fetch…"
    )
    limit: int = Field(50, ge=1, le=KEPT)


@TOOLS.tool(
    "network_requests",
    family="network",
    gated=False,
    params=RequestsParams,
    args=("url",),
    reads_secrets=True,  # addresses carry tokens
)
async def network_requests(session: Session, params: RequestsParams) -> dict[str, Any]:
    """The active tab's last 100 requests: id, method, url, status, type, size (newest last)."""
    page = session.page_or_none  # a read of the driver's: a dialog does not block it
    listed = await session.log.requests.listed(page) if page is not None else []
    picked = [
        summary(request_id, r)
        for request_id, r in listed
        if (params.url is None or params.url in r.url)
        and (params.type is None or r.resource_type == params.type)
    ]
    result: dict[str, Any] = {"requests": picked[-params.limit :], "count": len(picked)}
    if may_have_dropped(len(listed)):
        result["note"] = "A tab keeps its last 91 to 100 requests: older ones, if any, are gone."
    return result


class RequestParams(Params):
    """One request by the id network_requests gave it."""

    id: str = Field(pattern=r"^r\d+$", description="e.g. r12")
    body: bool = Field(True, description="include the response body when text and small")


def find_request(session: Session, request_id: str) -> Request:
    """The request network_requests listed as ``request_id``, or ``ELEMENT_NOT_FOUND``."""
    request = session.log.requests.find(request_id)
    if request is None:
        raise BrowserdError(
            ErrorCode.ELEMENT_NOT_FOUND,
            f"No request {request_id}: ids are given by network_requests, and a tab keeps "
            f"only its last {KEPT} requests (none once it closed).",
        )
    return request


async def response_body(request: Request) -> dict[str, Any]:
    """The response body when it is text and at most BODY_MAX bytes, else why not."""
    response = request.existing_response
    assert response is not None
    mime = response.headers.get("content-type", "")
    if not any(kind in mime for kind in TEXT_TYPES):
        return {"body_note": f"not text ({mime or 'no content type'})"}
    declared = size(request)
    if declared is not None and declared > BODY_MAX:
        return {"body_note": f"{declared:,} bytes: over {BODY_MAX:,}"}
    try:
        data = await response.body()
    except Exception:  # redirects and evicted bodies have none
        return {"body_note": "the body is no longer available"}
    if len(data) > BODY_MAX:
        return {"body_note": f"{len(data):,} bytes: over {BODY_MAX:,}"}
    return {"body": data.decode("utf-8", "replace")}


@TOOLS.tool(
    "network_request",
    family="network",
    gated=False,
    params=RequestParams,
    args=("id",),
    reads_secrets=True,  # addresses and bodies carry tokens
)
async def network_request(session: Session, params: RequestParams) -> dict[str, Any]:
    """One request in detail: headers (credentials redacted), status, timing, a small body."""
    request = find_request(session, params.id)
    response = request.existing_response
    detail: dict[str, Any] = {
        **summary(params.id, request),
        "request_headers": redact_headers(await request.all_headers()),
        "timing": request.timing,
    }
    if request.post_data is not None:
        detail["post_data_bytes"] = len(request.post_data_buffer or b"")
    if response is not None:
        detail["response_headers"] = redact_headers(await response.all_headers())
        if params.body:
            detail.update(await response_body(request))
    return detail


class RouteParams(Params):
    """A URL glob and what to do with matching requests."""

    pattern: str = Field(min_length=1, max_length=2000, description="URL glob, e.g. **/*.png")
    action: Literal["block", "fulfil"] = "block"
    status: int = Field(200, ge=100, le=599, description="fulfil: HTTP status")
    body: str = Field("", max_length=1_000_000, description="fulfil: response body")
    content_type: str = Field("text/plain", max_length=200, description="fulfil: MIME type")

    @model_validator(mode="after")
    def _fulfil_only(self) -> RouteParams:
        if self.action == "block" and {"status", "body", "content_type"} & self.model_fields_set:
            raise ValueError("status, body and content_type go with action=fulfil")
        return self


@TOOLS.tool(
    "network_route",
    family="network",
    gated=True,
    params=RouteParams,
    args=("pattern", "action", "*body"),
)
async def network_route(session: Session, params: RouteParams) -> dict[str, Any]:
    """Block requests matching a URL glob, or answer them with a given status and body."""
    context = session.page.context

    async def handle(route: Route) -> None:
        if params.action == "block":
            await route.abort("blockedbyclient")
        else:
            await route.fulfill(
                status=params.status, body=params.body, content_type=params.content_type
            )

    routes = ROUTES.setdefault(context, {})
    if params.pattern in routes:
        await context.unroute(params.pattern, routes.pop(params.pattern))
    await context.route(params.pattern, handle)
    routes[params.pattern] = handle
    return {"routed": params.pattern, "action": params.action, "routes": list(routes)}


class UnrouteParams(Params):
    """The pattern to stop routing, or none for all of them."""

    pattern: str | None = Field(None, min_length=1, max_length=2000)


@TOOLS.tool(
    "network_unroute", family="network", gated=True, params=UnrouteParams, args=("pattern",)
)
async def network_unroute(session: Session, params: UnrouteParams) -> dict[str, Any]:
    """Stop routing one URL glob (or, without one, every route of this window)."""
    context = session.page.context
    routes = ROUTES.setdefault(context, {})
    names = [params.pattern] if params.pattern else list(routes)
    if params.pattern and params.pattern not in routes:
        raise BrowserdError(
            ErrorCode.INVALID_PARAMS, f"No route {params.pattern!r}; routes: {list(routes)}."
        )
    for name in names:
        await context.unroute(name, routes.pop(name))
    return {"unrouted": names, "routes": list(routes)}
