"""Cookies of the session's context, and the active page's localStorage and sessionStorage.

Reading is free, changing is gated.  The two web storages share one definition: a
factory registers the same four tools for ``local`` and ``session``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from playwright.async_api import Error as PlaywrightError
from pydantic import Field, model_validator

from ..browser.refs import first_line
from ..browser.session import Session
from ..commands.registry import NoParams, Params, Registry
from ..errors import BrowserdError, ErrorCode

if TYPE_CHECKING:  # add_cookies' parameter type, which async_api does not re-export
    from playwright._impl._api_structures import SetCookieParam

TOOLS = Registry()
MAX_VALUE = 100_000


class CookieFilter(Params):
    """Which cookies: those sent to ``url`` and/or named ``name`` (all when omitted)."""

    url: str | None = Field(None, max_length=2000, description="cookies sent to this address")
    name: str | None = Field(None, max_length=256)


@TOOLS.tool(
    "cookies_get",
    family="storage",
    gated=False,
    params=CookieFilter,
    args=("name",),
    reads_secrets=True,
)
async def cookies_get(session: Session, params: CookieFilter) -> dict[str, Any]:
    """The session's cookies, optionally only those for an address or with a name."""
    context = session.page.context
    cookies = await context.cookies([params.url] if params.url else [])
    if params.name is not None:
        cookies = [c for c in cookies if c["name"] == params.name]
    return {"cookies": cookies, "count": len(cookies)}


class CookieSet(Params):
    """One cookie; it belongs to ``url`` (default: the active page) or to domain + path."""

    name: str = Field(min_length=1, max_length=256)
    value: str = Field(max_length=4096)
    url: str | None = Field(None, max_length=2000)
    domain: str | None = Field(None, max_length=253)
    path: str = Field("/", max_length=1000)
    expires: float | None = Field(None, ge=0, description="Unix time; a session cookie if none")
    http_only: bool = False
    secure: bool = False
    same_site: Literal["Strict", "Lax", "None"] = "Lax"

    @model_validator(mode="after")
    def _where(self) -> CookieSet:
        if self.url and self.domain:
            raise ValueError("give url or domain, not both")
        return self


@TOOLS.tool(
    "cookies_set",
    family="storage",
    gated=True,
    params=CookieSet,
    args=("name", "value"),
    destructive=True,
    idempotent=True,
)
async def cookies_set(session: Session, params: CookieSet) -> dict[str, Any]:
    """Set a cookie for the active page's address (or a given url or domain)."""
    cookie: SetCookieParam = {
        "name": params.name,
        "value": params.value,
        "httpOnly": params.http_only,
        "secure": params.secure,
        "sameSite": params.same_site,
    }
    if params.domain:
        cookie.update({"domain": params.domain, "path": params.path})
    else:
        url = params.url or session.page.url
        if not url.startswith(("http://", "https://")):
            raise BrowserdError(ErrorCode.REFUSED, "Cookies need an http(s) page: open one first.")
        cookie["url"] = url
    if params.expires is not None:
        cookie["expires"] = params.expires
    try:
        await session.page.context.add_cookies([cookie])
    except PlaywrightError as exc:
        raise BrowserdError(ErrorCode.INVALID_PARAMS, first_line(exc)) from None
    return {"set": params.name}


class CookieClear(Params):
    """Which cookies to delete (all when omitted)."""

    name: str | None = Field(None, max_length=256)
    domain: str | None = Field(None, max_length=253)


@TOOLS.tool(
    "cookies_clear",
    family="storage",
    gated=True,
    params=CookieClear,
    args=("name",),
    destructive=True,
    idempotent=True,
)
async def cookies_clear(session: Session, params: CookieClear) -> dict[str, Any]:
    """Delete the session's cookies, or only those with a name and/or domain."""
    context = session.page.context
    before = len(await context.cookies())
    filters = {k: v for k, v in (("name", params.name), ("domain", params.domain)) if v}
    await context.clear_cookies(**filters)
    return {"deleted": before - len(await context.cookies())}


class StorageKey(Params):
    """One key of the page's storage."""

    key: str = Field(min_length=1, max_length=1000)


class StorageSet(StorageKey):
    """A key and its new value."""

    value: str = Field(max_length=MAX_VALUE)


# One script for every operation, so both storages behave exactly alike.
STORAGE_JS = """([area, op, key, value]) => {
  const s = window[area];
  if (op === 'all') return Object.fromEntries(Object.keys(s).map(k => [k, s.getItem(k)]));
  if (op === 'get') return s.getItem(key);
  if (op === 'set') { s.setItem(key, value); return s.getItem(key); }
  const n = s.length; s.clear(); return n;
}"""


def storage_tools(kind: Literal["local", "session"]) -> None:
    """Register get, get_key, set and clear for ``localStorage`` or ``sessionStorage``."""
    area = f"{kind}Storage"

    async def use(session: Session, op: str, key: str = "", value: str = "") -> Any:
        try:
            return await session.page.evaluate(STORAGE_JS, [area, op, key, value])
        except PlaywrightError as exc:
            raise BrowserdError(
                ErrorCode.REFUSED, f"{area} is not available here ({first_line(exc)})."
            ) from None

    async def get(session: Session, params: NoParams) -> dict[str, Any]:
        return {"items": await use(session, "all")}

    async def get_key(session: Session, params: StorageKey) -> dict[str, Any]:
        return {"key": params.key, "value": await use(session, "get", params.key)}

    async def set_(session: Session, params: StorageSet) -> dict[str, Any]:
        stored = await use(session, "set", params.key, params.value)
        return {"key": params.key, "ok": stored == params.value}

    async def clear(session: Session, params: NoParams) -> dict[str, Any]:
        return {"deleted": await use(session, "clear")}

    prefix = f"storage_{kind}"
    for suffix, handler, model, gated, args, doc in (
        ("get", get, NoParams, False, (), f"Every item of the page's {area}."),
        ("get_key", get_key, StorageKey, False, ("key",), f"One item of the page's {area}."),
        ("set", set_, StorageSet, True, ("key", "*value"), f"Set an item of the page's {area}."),
        ("clear", clear, NoParams, True, (), f"Delete every item of the page's {area}."),
    ):
        handler.__doc__ = doc
        TOOLS.tool(
            f"{prefix}_{suffix}",
            family="storage",
            gated=gated,
            params=model,
            args=args,
            destructive=gated and kind == "local",  # localStorage outlives the page
            reads_secrets=not gated,  # where sites keep tokens
            idempotent=True,
        )(handler)


storage_tools("local")
storage_tools("session")
