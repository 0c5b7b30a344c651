"""What a vault entry is: a name, its origins, a username, a password, maybe a TOTP secret.

An origin is a scheme, a host and a port, compared exactly: ``https://github.com`` is not
``https://gist.github.com``, nor ``http://github.com``, nor ``https://github.com:8443``.  A
value never appears in an error: a bad TOTP secret is refused without repeating it.

This module is pure (no Nostr, no daemon): the tools import it, and reach the sealed entries
only through :class:`Keeper`, which ``vault/keeper.py`` implements for the daemon.
"""

from __future__ import annotations

import re
import time
import urllib.parse
from dataclasses import dataclass, field
from typing import Any, Protocol

import pyotp

from ..errors import BrowserdError, ErrorCode

NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
FIELDS = ("username", "password", "totp")
MAX_ORIGINS = 16
MAX_VALUE = 1024
DEFAULT_PORTS = {"http": 80, "https": 443}


def origin_of(url: str) -> str | None:
    """``https://github.com`` for ``https://GitHub.com:443/login?x``; None when the URL has
    no origin of its own (about:blank, data:, file:, a srcdoc frame)."""
    try:
        parts = urllib.parse.urlsplit(url.strip())
        port = parts.port
    except ValueError:
        return None
    scheme, host = parts.scheme.lower(), (parts.hostname or "").lower()
    if scheme not in DEFAULT_PORTS or not host:
        return None
    if ":" in host:
        host = f"[{host}]"
    shown = "" if port in (None, DEFAULT_PORTS[scheme]) else f":{port}"
    return f"{scheme}://{host}{shown}"


def parse_origins(given: str | list[str]) -> list[str]:
    """The origins of ``given`` (a list, or one string of them split by commas or spaces)."""
    words = given.replace(",", " ").split() if isinstance(given, str) else given
    origins: list[str] = []
    for word in words:
        origin = origin_of(word)
        if origin is None:
            raise BrowserdError(
                ErrorCode.INVALID_PARAMS,
                f"{word[:100]!r} is not an origin: give http(s)://host[:port].",
            )
        if origin not in origins:
            origins.append(origin)
    if not 1 <= len(origins) <= MAX_ORIGINS:
        raise BrowserdError(
            ErrorCode.INVALID_PARAMS, f"An entry has 1 to {MAX_ORIGINS} origins; nothing stored."
        )
    return origins


def totp_of(secret: str) -> pyotp.TOTP:
    """The TOTP an ``otpauth://totp/…`` URI or a base32 secret describes (RFC 6238)."""
    try:
        if secret.startswith("otpauth://"):
            otp = pyotp.parse_uri(secret)
            if not isinstance(otp, pyotp.TOTP):
                raise ValueError("not a TOTP")
        else:
            otp = pyotp.TOTP(secret.replace(" ", "").upper())
        otp.at(0)  # a secret that is not base32 fails here, not at the login
    except Exception:
        raise BrowserdError(
            ErrorCode.INVALID_PARAMS,
            "The TOTP secret is neither an otpauth://totp/ URI nor base32; nothing stored.",
        ) from None
    return otp


def totp_code(secret: str, at: float | None = None) -> str:
    """The one-time code of ``secret`` at ``at`` (now by default)."""
    return totp_of(secret).at(time.time() if at is None else at)


@dataclass(frozen=True)
class Entry:
    """An opened entry; ``repr`` never shows a value."""

    name: str
    origins: list[str]
    username: str = field(repr=False)
    password: str = field(repr=False)
    totp: str = field(default="", repr=False)

    @classmethod
    def checked(
        cls, name: str, origins: str | list[str], username: str, password: str, totp: str = ""
    ) -> Entry:
        """A new entry, every part checked; ``INVALID_PARAMS`` names the part, never a value."""
        if not NAME.match(name):
            raise BrowserdError(
                ErrorCode.INVALID_PARAMS, "An entry's name is letters, digits, _ or -; at most 64."
            )
        username, password, totp = username.strip("\r\n"), password.strip("\r\n"), totp.strip()
        for part, value in (("username", username), ("password", password)):
            if not value or len(value) > MAX_VALUE or "\n" in value:
                raise BrowserdError(
                    ErrorCode.INVALID_PARAMS,
                    f"The {part} is one line of 1 to {MAX_VALUE} characters; nothing stored.",
                )
        if totp:
            totp_of(totp)
        return cls(name, parse_origins(origins), username, password, totp)

    def value(self, part: str) -> str:
        """The username, the password, or the TOTP code now."""
        if part == "totp":
            if not self.totp:
                raise BrowserdError(ErrorCode.REFUSED, f"The entry {self.name!r} has no TOTP.")
            return totp_code(self.totp)
        return self.username if part == "username" else self.password

    def payload(self, owner: str) -> dict[str, Any]:
        """What is sealed: the values, and the owner, name and origins they are bound to."""
        return {"owner": owner, **self.__dict__}

    def shown(self) -> dict[str, Any]:
        """What ``vault_list`` and the model may see: the name, origins, whether a TOTP is set."""
        return {"name": self.name, "origins": self.origins, "totp": bool(self.totp)}


class Keeper(Protocol):
    """What the tools ask of the vault, always for one owner (``vault/keeper.py``'s Vault)."""

    async def add(self, owner: str, entry: Entry) -> dict[str, Any]: ...

    async def entries(self, owner: str) -> list[dict[str, Any]]: ...

    async def remove(self, owner: str, name: str) -> dict[str, Any]: ...

    async def open(self, owner: str, name: str) -> Entry: ...
