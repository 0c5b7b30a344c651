"""Turn what someone typed into an address, the way an address bar does, or refuse it.

A model is refused exactly what a person is: only the configured schemes load (http,
https and about by default); ``file:``, ``chrome:``, ``javascript:``, ``data:`` and the
rest are refused before the browser sees them.
"""

from __future__ import annotations

import ipaddress
import re
from urllib.parse import quote_plus, urlsplit

from ..errors import BrowserdError, ErrorCode

SCHEME = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.-]*):")
HOST_PORT = re.compile(r"^[^\s/:]+:\d+(/|$)")
LOCAL_HOSTS = ("localhost",)


def resolve(text: str, allowed_schemes: list[str], search_url: str) -> str:
    """An allowed absolute URL for ``text``: a URL, a bare host or a search phrase."""
    text = text.strip()
    if not text:
        raise BrowserdError(ErrorCode.INVALID_PARAMS, "url is empty.")
    scheme = SCHEME.match(text)
    if scheme and not HOST_PORT.match(text):
        name = scheme.group(1).lower()
        if name not in allowed_schemes:
            raise BrowserdError(
                ErrorCode.REFUSED,
                f"{name}: addresses are not allowed (allowed: {', '.join(allowed_schemes)}).",
            )
        return text
    if " " in text or not looks_like_host(text):
        return search_url.replace("{query}", quote_plus(text))
    host = urlsplit("//" + text).hostname or ""
    return ("http://" if is_local(host) else "https://") + text


def looks_like_host(text: str) -> bool:
    """``example.com``, ``localhost:8080/x`` or an IP address, not a word like ``python``."""
    host = urlsplit("//" + text).hostname or ""
    return "." in host or is_local(host)


def is_local(host: str) -> bool:
    """Loopback hosts are reached over http, as browsers do."""
    if host in LOCAL_HOSTS:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
