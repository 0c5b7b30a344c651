"""A Blossom client: blobs addressed by their sha256 on plain HTTP servers.

BUD-01 reads (``GET /<sha256>``), BUD-02 writes (``PUT /upload``, ``DELETE /<sha256>``), and
BUD-11 authorization: a kind 24242 event signed by the daemon's Signer (a bunker or an
n_signer works), base64 in ``Authorization: Nostr …``, with the verb in ``t``, the blob in
``x``, the server's domain in ``server`` (no other server takes it: it cannot be replayed
there) and an ``expiration`` minutes ahead.  Each call has an absolute deadline
(``http_client``): a server that trickles its answer is cut off there.
"""

from __future__ import annotations

import asyncio
import base64
import ipaddress
import json
from urllib.parse import urlsplit

from ..http_client import Overflow, Unreachable, opened, read_body
from ..nostr.nip01 import now
from ..nostr.signer import Signer

AUTH_KIND = 24242
AUTH_MINUTES = 5
TIMEOUT = 20.0
REASON_CHARS = 200
ANSWER_CAP = 64 * 1024  # bytes of a server's answer to an upload or delete read at most


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


def domain(server: str) -> str:
    """A server's domain, as BUD-11's ``server`` tag names it: its host, lower case."""
    return (urlsplit(server).hostname or "").lower()


async def authorization(signer: Signer, verb: str, sha256: str, purpose: str, server: str) -> str:
    """The ``Authorization`` header for one ``verb`` on one blob at ``server`` (its URL),
    valid a few minutes."""
    expiration = str(now() + AUTH_MINUTES * 60)
    template = {
        "kind": AUTH_KIND,
        "content": purpose,
        "tags": [
            ["t", verb],
            ["x", sha256],
            ["server", domain(server)],
            ["expiration", expiration],
        ],
        "created_at": now(),
    }
    event = await signer.sign_event(template)
    return "Nostr " + base64.b64encode(json.dumps(event).encode()).decode("ascii")


async def upload(server: str, blob: bytes, sha256: str, auth: str) -> str:
    """``PUT /upload``; the blob's URL from the server's descriptor.  Raises BlossomError."""
    headers = {
        "Authorization": auth,
        "Content-Type": "application/octet-stream",
        "X-SHA-256": sha256,
    }
    answer = await _call(server, "PUT", "/upload", headers, blob)
    try:
        descriptor = json.loads(answer)
    except ValueError:
        raise BlossomError(server, "answered with no blob descriptor") from None
    if not isinstance(descriptor, dict) or descriptor.get("sha256") != sha256:
        raise BlossomError(server, "answered with a descriptor of another blob")
    url = descriptor.get("url")
    return url if isinstance(url, str) and url.startswith("http") else f"{server}/{sha256}"


async def delete(server: str, sha256: str, auth: str) -> None:
    """``DELETE /<sha256>`` (BUD-12); a blob already gone (404) counts as deleted."""
    try:
        await _call(server, "DELETE", f"/{sha256}", {"Authorization": auth}, None)
    except BlossomError as exc:
        if not exc.answer.startswith("HTTP 404"):
            raise


async def _call(
    server: str, method: str, path: str, headers: dict[str, str], body: bytes | None
) -> bytes:
    deadline = asyncio.get_running_loop().time() + TIMEOUT
    try:
        async with opened(
            method, server + path, deadline=deadline, headers=headers, body=body
        ) as response:
            if 200 <= response.status_code < 300:
                return await read_body(response, ANSWER_CAP)
            reason = response.headers.get("X-Reason") or (
                (await read_body(response, ANSWER_CAP))[:REASON_CHARS].decode("utf-8", "replace")
            )
    except Overflow:
        raise BlossomError(server, "answered with more than a blob descriptor") from None
    except Unreachable as exc:
        raise BlossomError(server, f"unreachable ({exc})") from None
    except TimeoutError:
        raise BlossomError(server, f"no answer within {TIMEOUT:g} s") from None
    raise BlossomError(server, f"HTTP {response.status_code} {reason.strip()}".strip())


async def fetch(
    url: str, cap: int, proxy: str | None, deadline: float
) -> tuple[int, str | None, bytes]:
    """GET ``url`` without following redirects (each hop is judged first): the status, a
    redirect's location, and at most ``cap`` bytes of body (more raises ``Overflow``);
    ``TimeoutError`` past ``deadline`` (``loop.time()``), ``Unreachable`` on the way."""
    async with opened("GET", url, deadline=deadline, proxy=proxy) as response:
        if not 200 <= response.status_code < 300:
            return response.status_code, response.headers.get("Location"), b""
        return response.status_code, None, await read_body(response, cap)
