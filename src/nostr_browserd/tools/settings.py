"""Browser settings: viewport, network conditions, headers, HTTP auth, media, device,
position, timezone and locale.

Context-wide settings (offline, headers, credentials, geolocation) use Playwright's
context API.  Per-page ones (viewport, media, device, timezone, locale) are applied to
every open tab and remembered, so tabs opened later get them too (as they open: what a
document reads once when it starts, navigator.language and userAgent, holds from that
tab's next load).  The device's user agent, the timezone and the locale go through CDP
(``Emulation.*``), which changes them on a live context without re-creating it, so the
session keeps its tabs, cookies and storage.
"""

from __future__ import annotations

import base64
import re
import weakref
import zoneinfo
from typing import Annotated, Any, Literal

from playwright.async_api import BrowserContext, CDPSession, Geolocation, Page, Route
from playwright.async_api import Error as PlaywrightError
from pydantic import Field, Json

from ..browser.refs import first_line
from ..browser.session import Session
from ..commands.registry import Params, Registry
from ..errors import BrowserdError, ErrorCode

TOOLS = Registry()
# What each session asked for, per-page settings only, re-applied to each new tab.
SETTINGS: weakref.WeakKeyDictionary[Session, dict[str, Any]] = weakref.WeakKeyDictionary()
CDP: weakref.WeakKeyDictionary[Page, CDPSession] = weakref.WeakKeyDictionary()
WATCHED: weakref.WeakSet[BrowserContext] = weakref.WeakSet()
AUTH: weakref.WeakKeyDictionary[BrowserContext, Any] = weakref.WeakKeyDictionary()
HEADER = re.compile(r"^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,128}$")


async def cdp(page: Page) -> CDPSession:
    """This page's CDP session (kept: overrides last as long as it does)."""
    if page not in CDP:
        CDP[page] = await page.context.new_cdp_session(page)
    return CDP[page]


async def apply(page: Page, settings: dict[str, Any], keys: set[str]) -> None:
    """Put the per-page settings named in ``keys`` on one page."""
    if "viewport" in keys:
        await page.set_viewport_size(settings["viewport"])
    if "media" in keys:
        await page.emulate_media(**settings["media"])
    if "device" in keys:
        device = settings["device"]
        await (await cdp(page)).send("Emulation.setDeviceMetricsOverride", device["metrics"])
        await (await cdp(page)).send("Emulation.setTouchEmulationEnabled", device["touch"])
    if "timezone" in keys:
        zone = {"timezoneId": settings["timezone"]}
        await (await cdp(page)).send("Emulation.setTimezoneOverride", zone)
    if "locale" in keys:
        await (await cdp(page)).send("Emulation.setLocaleOverride", {"locale": settings["locale"]})
    if keys & {"device", "locale"}:  # one override carries both user agent and language
        device = settings.get("device")
        agent = device["user_agent"] if device else await page.evaluate("navigator.userAgent")
        override = {"userAgent": agent}
        if "locale" in settings:
            override["acceptLanguage"] = settings["locale"]
        await (await cdp(page)).send("Emulation.setUserAgentOverride", override)


async def settle(session: Session, **changes: Any) -> None:
    """Record ``changes`` for the session and apply them to every tab, now and later."""
    settings = SETTINGS.setdefault(session, {})
    previous = {key: settings[key] for key in changes if key in settings}
    settings.update(changes)
    context = session.page.context
    if context not in WATCHED:
        WATCHED.add(context)
        # A tab that opens gets them in the background (an event handler cannot await); the
        # command that opened it waits for that before it answers (``Session.settle``).
        context.on("page", lambda page: session.chores.run(apply(page, settings, set(settings))))
    try:
        for tab in list(session.tabs.values()):
            await apply(tab.page, settings, set(changes))
    except PlaywrightError as exc:
        for key in changes:
            settings.pop(key, None)
        settings.update(previous)
        raise BrowserdError(ErrorCode.INVALID_PARAMS, first_line(exc)) from None


class ViewportParams(Params):
    """The viewport's size in CSS pixels."""

    width: int = Field(ge=100, le=10_000)
    height: int = Field(ge=100, le=10_000)


@TOOLS.tool(
    "set_viewport",
    family="settings",
    gated=True,
    idempotent=True,
    params=ViewportParams,
    args=("width", "height"),
)
async def set_viewport(session: Session, params: ViewportParams) -> dict[str, Any]:
    """Resize the viewport of every tab (and of tabs opened later)."""
    await settle(session, viewport={"width": params.width, "height": params.height})
    return {"viewport": [params.width, params.height]}


class MediaParams(Params):
    """CSS media features to emulate; omitted ones stay as they are."""

    color_scheme: Literal["light", "dark", "no-preference"] | None = None
    reduced_motion: Literal["reduce", "no-preference"] | None = None
    media: Literal["screen", "print"] | None = None


@TOOLS.tool(
    "set_media",
    family="settings",
    gated=True,
    idempotent=True,
    params=MediaParams,
    args=("color_scheme",),
)
async def set_media(session: Session, params: MediaParams) -> dict[str, Any]:
    """Emulate a colour scheme (dark, light), reduced motion or print media."""
    asked = params.model_dump(exclude_none=True)
    if not asked:
        raise BrowserdError(ErrorCode.INVALID_PARAMS, "Give color_scheme, reduced_motion or media.")
    media = {**SETTINGS.get(session, {}).get("media", {}), **asked}
    await settle(session, media=media)
    return {"media": media}


class DeviceParams(Params):
    """A device name from Playwright's catalogue, e.g. "iPhone 13" or "Pixel 7"."""

    name: str = Field(min_length=1, max_length=100)


@TOOLS.tool(
    "set_device",
    family="settings",
    gated=True,
    idempotent=True,
    params=DeviceParams,
    args=("*name",),
)
async def set_device(session: Session, params: DeviceParams) -> dict[str, Any]:
    """Emulate a phone or tablet: viewport, pixel ratio, touch, mobile mode and user agent."""
    devices = session.reach.devices
    spec = devices.get(params.name)
    if spec is None:
        words = params.name.casefold().split()
        near = [n for n in devices if all(w in n.casefold() for w in words)][:10]
        hint = f" Did you mean: {', '.join(near)}?" if near else ""
        raise BrowserdError(ErrorCode.INVALID_PARAMS, f"No device {params.name!r}.{hint}")
    viewport = spec["viewport"]
    touch = spec.get("has_touch", False)
    device = {
        "metrics": {
            "width": viewport["width"],
            "height": viewport["height"],
            "deviceScaleFactor": spec.get("device_scale_factor", 1),
            "mobile": spec.get("is_mobile", False),
        },
        "touch": {"enabled": touch, "maxTouchPoints": 5} if touch else {"enabled": False},
        "user_agent": spec["user_agent"],
    }
    await settle(session, device=device)
    return {"device": params.name, **device["metrics"], "touch": touch}


class ZoneParams(Params):
    """An IANA time zone."""

    timezone: str = Field(pattern=r"^[A-Za-z0-9_+/-]{1,64}$", description="e.g. Asia/Tokyo")


@TOOLS.tool(
    "set_timezone",
    family="settings",
    gated=True,
    idempotent=True,
    params=ZoneParams,
    args=("timezone",),
)
async def set_timezone(session: Session, params: ZoneParams) -> dict[str, Any]:
    """Emulate a time zone for Date and Intl in every tab."""
    try:  # Chromium takes any name once an override is on: check it against the tz database
        zoneinfo.ZoneInfo(params.timezone)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise BrowserdError(
            ErrorCode.INVALID_PARAMS, f"No time zone {params.timezone!r}."
        ) from None
    await settle(session, timezone=params.timezone)
    return {"timezone": params.timezone}


class LocaleParams(Params):
    """A BCP 47 language tag."""

    locale: str = Field(pattern=r"^[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8}){0,3}$", description="de-DE")


@TOOLS.tool(
    "set_locale",
    family="settings",
    gated=True,
    idempotent=True,
    params=LocaleParams,
    args=("locale",),
)
async def set_locale(session: Session, params: LocaleParams) -> dict[str, Any]:
    """Emulate a locale: navigator.language, Accept-Language and Intl formatting."""
    await settle(session, locale=params.locale)
    return {"locale": params.locale}


class OfflineParams(Params):
    """Whether the network is cut."""

    offline: bool = True


@TOOLS.tool(
    "set_offline",
    family="settings",
    gated=True,
    idempotent=True,
    params=OfflineParams,
    args=("offline",),
)
async def set_offline(session: Session, params: OfflineParams) -> dict[str, Any]:
    """Cut the session's network (offline=true) or restore it (offline=false)."""
    await session.page.context.set_offline(params.offline)
    return {"offline": params.offline}


Headers = Annotated[dict[str, str], Field(max_length=50)]


class HeadersParams(Params):
    """Extra request headers for every request of the session; {} removes them."""

    headers: Headers | Json[Headers] = Field(description='e.g. {"X-Team": "blue"}, JSON in text')


@TOOLS.tool(
    "set_headers",
    family="settings",
    gated=True,
    idempotent=True,
    params=HeadersParams,
    args=("*headers",),
)
async def set_headers(session: Session, params: HeadersParams) -> dict[str, Any]:
    """Send extra HTTP headers with every request of the session ({} clears them)."""
    for name, value in params.headers.items():
        if not HEADER.match(name) or len(value) > 4096 or "\n" in value or "\r" in value:
            raise BrowserdError(ErrorCode.INVALID_PARAMS, f"Header {name[:40]!r} is not valid.")
    await session.page.context.set_extra_http_headers(params.headers)
    return {"headers": sorted(params.headers)}


class CredentialsParams(Params):
    """HTTP Basic credentials for one origin; no username removes them."""

    username: str | None = Field(None, max_length=256)
    password: str = Field("", max_length=1024, description="never echoed or returned")
    origin: str | None = Field(
        None, pattern=r"^https?://[^/\s]+$", description="default: the active page's origin"
    )


@TOOLS.tool(
    "set_credentials",
    family="settings",
    gated=True,
    idempotent=True,
    params=CredentialsParams,
    args=("username", "password"),
)
async def set_credentials(session: Session, params: CredentialsParams) -> dict[str, Any]:
    """Answer HTTP Basic auth for one origin (the active page's by default); sent nowhere else."""
    context = session.page.context
    old = AUTH.pop(context, None)
    if old is not None:
        await context.unroute(*old)
    if params.username is None:
        return {"credentials": None}
    origin = params.origin or await session.page.evaluate("location.origin")
    if not origin.startswith(("http://", "https://")):
        raise BrowserdError(ErrorCode.REFUSED, "Credentials need an http(s) origin.")
    token = base64.b64encode(f"{params.username}:{params.password}".encode()).decode()

    async def authorize(route: Route) -> None:
        headers = await route.request.all_headers()
        await route.fallback(headers={**headers, "authorization": f"Basic {token}"})

    pattern = f"{origin}/**"
    await context.route(pattern, authorize)
    AUTH[context] = (pattern, authorize)
    return {"origin": origin, "username": params.username}


class GeoParams(Params):
    """A position on Earth."""

    latitude: float = Field(ge=-90, le=90)
    longitude: float = Field(ge=-180, le=180)
    accuracy: float = Field(10, ge=0, le=100_000, description="metres")


@TOOLS.tool(
    "set_geo",
    family="settings",
    gated=True,
    idempotent=True,
    params=GeoParams,
    args=("latitude", "longitude"),
)
async def set_geo(session: Session, params: GeoParams) -> dict[str, Any]:
    """Grant geolocation and report this position to every page of the session."""
    context = session.page.context
    await context.grant_permissions(["geolocation"])
    await context.set_geolocation(
        Geolocation(latitude=params.latitude, longitude=params.longitude, accuracy=params.accuracy)
    )
    return params.model_dump()
