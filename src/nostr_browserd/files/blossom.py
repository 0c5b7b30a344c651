"""A Blossom client: blobs addressed by their sha256 on plain HTTP servers.

BUD-01 reads (``GET /<sha256>``), BUD-02 writes (``PUT /upload``, ``DELETE /<sha256>``), and
BUD-11 authorization: a kind 24242 event signed by the daemon's Signer (a bunker or an
n_signer works), base64 in ``Authorization: Nostr …``, with the verb in ``t``, the blob in
``x`` and an ``expiration`` minutes ahead.  The calls block (urllib): run them in a thread.
"""

from __future__ import annotations

import base64
import ipaddress
import json
import time
import urllib.error
import urllib.request
from typing import Any
from urllib.parse import urlsplit

from ..nostr.nip01 import now
from ..nostr.signer import Signer

AUTH_KIND = 24242
AUTH_MINUTES = 5
TIMEOUT = 20.0
REASON_CHARS = 200


class BlossomError(Exception):
    """A server that did not take (or give) a blob, and its answer, for the person to read."""

    def __init__(self, server: str, answer: str) -> None:
        super().__init__(f"{server}: {answer}")
        self.server, self.answer = server, answer


def server_address(url: str) -> bool:
    """Whether ``url`` may be a Blossom server's (or blob's) address: ``https://``, or
    ``http://`` on a loopback address only (a test, or a server on this machine)."""
    if url.startswith("https://"):
        return True
    if not url.startswith("http://"):
        return False
    host = urlsplit(url).hostname or ""
    try:
        return host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


async def authorization(signer: Signer, verb: str, sha256: str, purpose: str) -> str:
    """The ``Authorization`` header for one ``verb`` on one blob, valid a few minutes."""
    template = {
        "kind": AUTH_KIND,
        "content": purpose,
        "tags": [["t", verb], ["x", sha256], ["expiration", str(now() + AUTH_MINUTES * 60)]],
        "created_at": now(),
    }
    event = await signer.sign_event(template)
    return "Nostr " + base64.b64encode(json.dumps(event).encode()).decode("ascii")


def upload(server: str, blob: bytes, sha256: str, auth: str) -> str:
    """``PUT /upload``; the blob's URL from the server's descriptor.  Raises BlossomError."""
    headers = {
        "Authorization": auth,
        "Content-Type": "application/octet-stream",
        "X-SHA-256": sha256,
    }
    answer = _call(server, "PUT", "/upload", headers, blob)
    try:
        descriptor = json.loads(answer)
    except ValueError:
        raise BlossomError(server, "answered with no blob descriptor") from None
    if not isinstance(descriptor, dict) or descriptor.get("sha256") != sha256:
        raise BlossomError(server, "answered with a descriptor of another blob")
    url = descriptor.get("url")
    return url if isinstance(url, str) and url.startswith("http") else f"{server}/{sha256}"


def delete(server: str, sha256: str, auth: str) -> None:
    """``DELETE /<sha256>`` (BUD-12); a blob already gone (404) counts as deleted."""
    try:
        _call(server, "DELETE", f"/{sha256}", {"Authorization": auth}, None)
    except BlossomError as exc:
        if not exc.answer.startswith("HTTP 404"):
            raise


def _call(
    server: str, method: str, path: str, headers: dict[str, str], body: bytes | None
) -> bytes:
    request = urllib.request.Request(server + path, data=body, headers=headers, method=method)
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT) as response:
            data: bytes = response.read()
            return data
    except urllib.error.HTTPError as exc:
        with exc:
            reason = exc.headers.get("X-Reason") or exc.read(REASON_CHARS).decode(
                "utf-8", "replace"
            )
        raise BlossomError(server, f"HTTP {exc.code} {reason.strip()}".strip()) from None
    except (OSError, ValueError) as exc:
        raise BlossomError(server, _unreachable(exc)) from None


def _unreachable(exc: BaseException) -> str:
    reason: Any = getattr(exc, "reason", None) or exc
    return f"unreachable ({getattr(reason, 'strerror', None) or reason})"


def fetch(url: str, cap: int, proxy: str | None, deadline: float) -> tuple[int, str | None, bytes]:
    """GET ``url`` without following redirects (each hop is judged first): the status, a
    redirect's location, and at most ``cap`` bytes of body (more raises ``ValueError``)."""
    proxies = {"http": proxy, "https": proxy} if proxy else {}
    opener = urllib.request.build_opener(urllib.request.ProxyHandler(proxies), _NoRedirects)
    timeout = max(0.1, deadline - time.monotonic())
    try:
        response = opener.open(urllib.request.Request(url), timeout=timeout)
    except urllib.error.HTTPError as exc:
        with exc:
            return exc.code, exc.headers.get("Location"), b""
    with response:
        length = response.headers.get("Content-Length", "")
        if length.isdigit() and int(length) > cap:
            raise ValueError(f"{int(length):,} bytes")
        body = response.read(cap + 1)
        if len(body) > cap:
            raise ValueError(f"over {cap:,} bytes")
        return response.status, None, body


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None
