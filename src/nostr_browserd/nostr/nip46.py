"""NIP-46 (Nostr Connect) wire format: URIs, JSON-RPC-like messages, kind-24133 events.

Pure functions only; the client (``login/bunker.py``) and the remote signer
(``login/bunker_server.py``) do the I/O. Messages travel as the NIP-44 (or, from old
signers, NIP-04) encrypted content of kind-24133 events p-tagged to the recipient.

Connection secrets are bearer tokens: nothing here puts them in a repr or an error.
"""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, quote, urlsplit

from ..untrusted_json import loads as loads_json
from .errors import NostrError
from .nip01 import now
from .nip04 import looks_like_nip04 as is_nip04_payload
from .signer import Signer

__all__ = [
    "KIND",
    "METHODS",
    "BunkerPointer",
    "ConnectPointer",
    "Nip46Error",
    "Permission",
    "Request",
    "Response",
    "bunker_url",
    "decode_message",
    "decrypt_content",
    "encrypt_content",
    "event_template",
    "format_perms",
    "is_nip04_payload",
    "new_request_id",
    "nostrconnect_uri",
    "parse_bunker_url",
    "parse_nostrconnect_uri",
    "parse_perms",
    "permits",
]

KIND = 24133

# Methods a user-key signer answers (``connect`` and the transport ones aside).
METHODS = (
    "connect",
    "ping",
    "get_public_key",
    "sign_event",
    "nip04_encrypt",
    "nip04_decrypt",
    "nip44_encrypt",
    "nip44_decrypt",
    "get_relays",
    "switch_relays",
    "logout",
)

_HEX = frozenset("0123456789abcdef")
_RELAY_SCHEMES = ("wss://", "ws://")


class Nip46Error(NostrError):
    """A malformed NIP-46 URI or message (the message never repeats a secret)."""


def _check_pubkey(value: str, what: str) -> str:
    value = value.lower()
    if len(value) != 64 or not set(value) <= _HEX:
        raise Nip46Error(f"{what} must be 64 hex characters")
    return value


def _check_relays(relays: list[str] | tuple[str, ...]) -> tuple[str, ...]:
    if not relays:
        raise Nip46Error("at least one relay=wss://… is required")
    for relay in relays:
        if not relay.startswith(_RELAY_SCHEMES):
            raise Nip46Error(f"relay {relay!r} must be a ws:// or wss:// URL")
    return tuple(dict.fromkeys(relays))


def _split_uri(uri: str, scheme: str) -> tuple[str, dict[str, list[str]]]:
    """``(host, query)`` of ``scheme://host?query`` without echoing the URI in errors."""
    if not isinstance(uri, str) or not uri.strip().lower().startswith(f"{scheme}://"):
        raise Nip46Error(f"expected a {scheme}://<pubkey>?relay=… URI")
    try:
        parts = urlsplit(uri.strip())
        query = parse_qs(parts.query, keep_blank_values=False)
    except ValueError:  # an unbalanced "[" in the host ("Invalid IPv6 URL")
        raise Nip46Error(f"expected a {scheme}://<pubkey>?relay=… URI") from None
    return parts.netloc, query


def _one(query: dict[str, list[str]], key: str) -> str | None:
    values = query.get(key)
    return values[0] if values else None


# -- permissions ----------------------------------------------------------------------


@dataclass(frozen=True)
class Permission:
    """``method`` or ``method:kind`` (``sign_event:1``): what a client may ask for."""

    method: str
    kind: int | None = None

    def __str__(self) -> str:
        return self.method if self.kind is None else f"{self.method}:{self.kind}"


def parse_perms(text: str | None) -> tuple[Permission, ...]:
    """Parse ``"sign_event:1,nip44_encrypt"``; an unknown method or bad kind is an error.

    A bare kind continues the ``sign_event`` before it: ``"sign_event:1,14"`` allows kinds
    1 and 14.
    """
    perms: list[Permission] = []
    for item in (text or "").split(","):
        item = item.strip()
        if not item:
            continue
        if item.isdigit() and perms and perms[-1].kind is not None:
            item = f"{perms[-1].method}:{item}"
        method, _, kind = item.partition(":")
        if method not in METHODS:
            raise Nip46Error(f"unknown permission {method!r}; known: {', '.join(METHODS)}")
        if kind and (method != "sign_event" or not kind.isdigit() or int(kind) > 65535):
            raise Nip46Error(f"bad permission {item!r}: only sign_event takes a kind 0..65535")
        perms.append(Permission(method, int(kind) if kind else None))
    return tuple(dict.fromkeys(perms))


def format_perms(perms: tuple[Permission, ...] | list[Permission]) -> str:
    """The comma-separated form used in URIs and in ``connect``'s third param."""
    return ",".join(str(p) for p in perms)


def permits(perms: tuple[Permission, ...], method: str, kind: int | None = None) -> bool:
    """True if ``perms`` allow ``method`` (for ``sign_event``: of this ``kind``)."""
    return any(p.method == method and (p.kind is None or p.kind == kind) for p in perms)


# -- bunker:// ------------------------------------------------------------------------


@dataclass(frozen=True)
class BunkerPointer:
    """Where a remote signer listens: its transport pubkey, relays, one-time secret."""

    pubkey: str
    relays: tuple[str, ...]
    secret: str | None = field(default=None, repr=False)

    def __repr__(self) -> str:
        hidden = "set" if self.secret else "none"
        return f"BunkerPointer(pubkey={self.pubkey}, relays={list(self.relays)}, secret={hidden})"

    __str__ = __repr__


def parse_bunker_url(url: str) -> BunkerPointer:
    """Parse ``bunker://<remote-signer-pubkey>?relay=…&relay=…&secret=…``."""
    host, query = _split_uri(url, "bunker")
    pubkey = _check_pubkey(host, "the bunker:// remote-signer pubkey")
    return BunkerPointer(pubkey, _check_relays(query.get("relay", [])), _one(query, "secret"))


def _query(pairs: list[tuple[str, str]]) -> str:
    return "&".join(f"{k}={quote(v, safe='')}" for k, v in pairs)


def bunker_url(pubkey: str, relays: list[str] | tuple[str, ...], secret: str | None) -> str:
    """The ``bunker://`` URL an operator hands to a client (it contains the secret)."""
    pairs = [("relay", r) for r in _check_relays(relays)]
    if secret:
        pairs.append(("secret", secret))
    return f"bunker://{_check_pubkey(pubkey, 'pubkey')}?{_query(pairs)}"


# -- nostrconnect:// ------------------------------------------------------------------


@dataclass(frozen=True)
class ConnectPointer:
    """A client-initiated connection: the client's pubkey, relays, secret, wishes."""

    client_pubkey: str
    relays: tuple[str, ...]
    secret: str = field(repr=False)
    perms: tuple[Permission, ...] = ()
    name: str | None = None

    def __repr__(self) -> str:
        return (
            f"ConnectPointer(client_pubkey={self.client_pubkey}, relays={list(self.relays)}, "
            f"perms={format_perms(self.perms)!r}, name={self.name!r}, secret=set)"
        )

    __str__ = __repr__


def nostrconnect_uri(
    client_pubkey: str,
    relays: list[str] | tuple[str, ...],
    secret: str,
    perms: tuple[Permission, ...] | list[Permission] = (),
    name: str | None = None,
) -> str:
    """``nostrconnect://<client-pubkey>?relay=…&secret=…&perms=…&name=…`` for a signer app."""
    if not secret:
        raise Nip46Error("a nostrconnect:// URI needs a secret")
    pairs = [("relay", r) for r in _check_relays(relays)]
    pairs.append(("secret", secret))
    if perms:
        pairs.append(("perms", format_perms(tuple(perms))))
    if name:
        # ``name`` is the current spec; rust-nostr (0.45) still requires ``metadata``.
        pairs.append(("name", name))
        pairs.append(("metadata", json.dumps({"name": name}, separators=(",", ":"))))
    return f"nostrconnect://{_check_pubkey(client_pubkey, 'client pubkey')}?{_query(pairs)}"


def parse_nostrconnect_uri(uri: str) -> ConnectPointer:
    """Parse a ``nostrconnect://`` URI; the secret is required (it proves the signer)."""
    host, query = _split_uri(uri, "nostrconnect")
    secret = _one(query, "secret")
    if not secret:
        raise Nip46Error("the nostrconnect:// URI has no secret=…")
    name = _one(query, "name")
    if name is None and (metadata := _one(query, "metadata")):
        # Older clients put {"name": …} in a JSON metadata parameter.
        try:
            name = loads_json(metadata).get("name")
        except (ValueError, AttributeError):
            name = None
    return ConnectPointer(
        client_pubkey=_check_pubkey(host, "the nostrconnect:// client pubkey"),
        relays=_check_relays(query.get("relay", [])),
        secret=secret,
        perms=parse_perms(_one(query, "perms")),
        name=name if isinstance(name, str) else None,
    )


# -- messages -------------------------------------------------------------------------


def new_request_id() -> str:
    """A random request id (the response echoes it)."""
    return secrets.token_hex(8)


@dataclass(frozen=True)
class Request:
    """``{"id", "method", "params": [strings]}``."""

    id: str
    method: str
    params: tuple[str, ...] = ()

    def encode(self) -> str:
        return json.dumps({"id": self.id, "method": self.method, "params": list(self.params)})

    def __repr__(self) -> str:
        # Params can carry a connect secret or plaintext: show only their count.
        return f"Request(id={self.id!r}, method={self.method!r}, params=<{len(self.params)}>)"


@dataclass(frozen=True)
class Response:
    """``{"id", "result", "error"?}``; ``result == "auth_url"`` carries a URL in ``error``."""

    id: str
    result: str | None = None
    error: str | None = None

    @property
    def is_auth_url(self) -> bool:
        return self.result == "auth_url" and bool(self.error)

    def encode(self) -> str:
        body: dict[str, Any] = {"id": self.id, "result": self.result}
        if self.error is not None:
            body["error"] = self.error
        return json.dumps(body)

    def __repr__(self) -> str:
        return f"Response(id={self.id!r}, error={self.error!r}, result=<{len(self.result or '')}>)"


def decode_message(text: str) -> Request | Response:
    """Parse decrypted content into a :class:`Request` (has ``method``) or :class:`Response`."""
    try:
        body = loads_json(text)
    except ValueError as exc:
        raise Nip46Error(f"NIP-46 content: {exc}") from None
    if not isinstance(body, dict) or not isinstance(body.get("id"), str) or not body["id"]:
        raise Nip46Error("NIP-46 message must be an object with a string id")
    if "method" in body:
        params = body.get("params", [])
        if not isinstance(body["method"], str) or not isinstance(params, list):
            raise Nip46Error("NIP-46 request needs a string method and a params list")
        if not all(isinstance(p, str) for p in params):
            raise Nip46Error("NIP-46 request params must all be strings")
        return Request(body["id"], body["method"], tuple(params))
    result, error = body.get("result"), body.get("error")
    if result is not None and not isinstance(result, str):
        # Some signers send sign_event's result as an object instead of a JSON string.
        result = json.dumps(result) if isinstance(result, dict) else None
    if error is not None and not isinstance(error, str):
        error = str(error)
    if result is None and not error:
        raise Nip46Error("NIP-46 response has neither a result nor an error")
    return Response(body["id"], result, error or None)


# -- events ---------------------------------------------------------------------------


def event_template(recipient: str, content: str) -> dict[str, Any]:
    """A kind-24133 template carrying encrypted ``content`` to ``recipient``."""
    return {"kind": KIND, "created_at": now(), "tags": [["p", recipient]], "content": content}


async def encrypt_content(signer: Signer, peer: str, text: str, *, nip04: bool = False) -> str:
    """Encrypt a message for ``peer`` with NIP-44 (or NIP-04 for a legacy peer)."""
    if nip04:
        return await signer.nip04_encrypt(peer, text)
    return await signer.nip44_encrypt(peer, text)


async def decrypt_content(signer: Signer, peer: str, content: str) -> tuple[str, bool]:
    """Decrypt ``content`` from ``peer``; returns ``(text, was_nip04)``."""
    if is_nip04_payload(content):
        return await signer.nip04_decrypt(peer, content), True
    return await signer.nip44_decrypt(peer, content), False
