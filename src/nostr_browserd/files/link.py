"""A large file for ``mcp --to`` by link: sealed on Blossom, its address and keys in place of
its base64.

Measured by bench/phone.py (``--only phone``, docs/benchmarks.md): a 1.6 MB PDF or full-page
screenshot through ``mcp --to`` by link took 0.44–0.46× the time of our DM envelope's parts
and 0.49–0.67× that of ContextVM's CEP-22 parts.  Below :data:`LINK_AT_LEAST` the parts are
few and the upload's round trip would weigh more (not measured at that size).

Only our ``mcp --to`` asks for it: ``"files": "link"`` in a JSON request (the DM envelope),
``_meta`` ``mcpshape.content.LINK_ASK`` ``"link"`` on a ContextVM ``tools/call``.  Any other
request keeps its base64, as MCP hosts and scripts expect, and so does every request to a
daemon without ``[files] blossom_servers``.  A daemon with Blossom servers then
seals a file of at least :data:`LINK_AT_LEAST` bytes and uploads it as it does a chat's file
(``FileSender.link``: BUD-11 through the Signer, deleted after ``[files] keep``), and the
response's ``data`` carries ``link`` = ``{"url", "tags"}`` (what a kind 15 carries: ``x``,
``ox``, key, nonce, ``file-type``, ``size``) in place of ``base64``; over ContextVM the
result's ``_meta`` carries it (``mcpshape.content.LINK_META``).  When no server takes it,
the file goes in parts as before, and the daemon's log says why.

``mcp --to`` fetches the blob, checks ``x``, decrypts, checks ``ox`` (:func:`fetch_file`) and
gives the host the same content the base64 would have made (:func:`inline`,
:func:`inline_result`); a link or blob that does not check out is an error result saying why.
The link is signed by the daemon, but it is still an address someone else chose: it is
fetched only over ``https://``, or ``http://`` on loopback when the daemon itself is on this
machine (every relay ``mcp --to`` reaches it by is on loopback), the rule the client keeps
for ``blossom_servers`` too.  A daemon elsewhere cannot point it at this machine's services.
"""

from __future__ import annotations

import asyncio
import base64
from typing import TYPE_CHECKING, Any

from ..errors import BrowserdError, ErrorCode
from ..http_client import Overflow, Unreachable
from . import blossom
from .sealed import Sealed, Unsealable, file_tags, read_file_message, unseal

if TYPE_CHECKING:
    import mcp_types as types

LINK_AT_LEAST = 256 * 1024  # bytes of file; smaller ones go in parts (a link's fixed cost)
FETCH_SECONDS = 60.0
GCM_TAG = 16  # bytes AES-GCM adds to the file


def link_of(url: str, sealed: Sealed, mime: str, dim: str | None) -> dict[str, Any]:
    """What a response carries in place of the file's base64."""
    return {"url": url, "tags": file_tags(sealed, mime, dim)}


async def fetch_file(link: Any, local: bool) -> bytes:
    """The file a daemon's ``link`` points at, fetched and checked; ``BrowserdError`` saying
    what failed (``REFUSED`` for a link or blob that does not check out).  ``local``: the
    daemon is on this machine, so an ``http://`` link on loopback is fetched too."""
    if not isinstance(link, dict) or not isinstance(link.get("url"), str):
        raise _refused("The daemon's file link has no address.")
    tags = [t for t in link.get("tags") or [] if isinstance(t, list)]
    try:
        message = read_file_message(link["url"], tags)
    except Unsealable as exc:
        raise _refused(f"The daemon's file link is malformed: {exc}") from None
    url = message.url
    if not url.startswith("https://") and not (local and blossom.server_address(url)):
        also = " (http:// on loopback only from a daemon on this machine)"
        raise _refused(f"{url} is not https://{also}: not fetched.")
    size = next((t[1] for t in tags if len(t) >= 2 and t[0] == "size"), "")
    if not isinstance(size, str) or not size.isdigit():
        raise _refused("The daemon's file link gives no size.")
    deadline = asyncio.get_running_loop().time() + FETCH_SECONDS
    try:
        status, _, blob = await blossom.fetch(url, int(size) + GCM_TAG, None, deadline)
    except Overflow as exc:
        raise _refused(f"The blob at {url} is larger than its link says ({exc}).") from None
    except Unreachable as exc:
        raise BrowserdError(ErrorCode.UNAVAILABLE, f"Could not fetch {url} ({exc}).") from None
    except TimeoutError:
        late = f"Could not fetch {url} within {FETCH_SECONDS:g} s."
        raise BrowserdError(ErrorCode.TIMEOUT, late) from None
    if status != 200:
        raise BrowserdError(ErrorCode.UNAVAILABLE, f"Could not fetch {url}: HTTP {status}.")
    try:
        return unseal(message, blob)
    except Unsealable as exc:
        raise _refused(f"The file at {url} is refused: {exc}") from None


async def inline(response: dict[str, Any], local: bool) -> dict[str, Any]:
    """A protocol response whose file came by link, with its base64 back in place of it
    (``local``: as :func:`fetch_file`)."""
    data = response.get("data")
    if not response.get("success") or not isinstance(data, dict) or "link" not in data:
        return response
    content = await fetch_file(data["link"], local)
    rest = {k: v for k, v in data.items() if k != "link"}
    return {**response, "data": {**rest, "base64": base64.b64encode(content).decode("ascii")}}


async def inline_result(result: types.CallToolResult, local: bool) -> types.CallToolResult:
    """A ContextVM result whose file came by link (its ``_meta``), with the file's content in
    front of its text, as the base64 would have made it (``local``: as :func:`fetch_file`)."""
    # here, not at the top: the daemon imports this module, and the MCP types slow its start
    from ..mcpshape.content import LINK_META, binary_content, default_name

    meta = result.meta or {}
    link = meta.get(LINK_META)
    if not isinstance(link, dict):
        return result
    blob = base64.b64encode(await fetch_file(link, local)).decode("ascii")
    mime = str(link.get("mime") or "application/octet-stream")
    block = binary_content(str(link.get("name") or default_name(mime)), mime, blob, None)
    rest = {k: v for k, v in meta.items() if k != LINK_META} or None
    return result.model_copy(update={"content": [block, *result.content], "meta": rest})


def _refused(message: str) -> BrowserdError:
    return BrowserdError(ErrorCode.REFUSED, message)
