"""Files in: a kind 15 file message from a controller, fetched, checked and kept for upload.

The URL is outside input, so the daemon fetches it as it fetches for a page: each hop judged
by the network policy (``[browser] block_private_networks``, ``allowed_hosts``), through the
egress proxy when the policy applies to the controller.  The blob must hash to ``x``,
decrypt with the message's key and nonce, and the file hash to ``ox``; both are bounded by
``[files] max_mb``.  The fetch, redirects included, ends at :data:`FETCH_SECONDS`, and a
controller has at most :data:`FETCHES_PER_OWNER` under way (``BUSY`` past that).  Only then
is it written, within the controller's quota (``FileQuota``: it expires after ``[files]
received_keep``), in the controller's own uploads folder, under a safe name with the
extension its ``file-type`` gives, so ``upload @e5 <name>`` can send it to a page.  Anything
else is refused with the reason, and nothing is kept.

Only allow-listed keys get this far: the inbox never opens a stranger's seal, so a
stranger's file message is never fetched.
"""

from __future__ import annotations

import asyncio
import mimetypes
from collections.abc import Awaitable, Callable
from pathlib import Path, PurePath
from typing import Any
from urllib.parse import urljoin, urlsplit

from ..browser.netpolicy import NetworkPolicy
from ..browser.paths import free_name, owner_dir
from ..browser.quota import FileQuota
from ..capacity import Capacity
from ..errors import BrowserdError, ErrorCode
from ..http_client import Overflow, Unreachable
from . import blossom
from .sealed import FileMessage, Unsealable, read_file_message, refused, unseal

MAX_REDIRECTS = 3
FETCH_SECONDS = 60.0
FETCHES, FETCHES_PER_OWNER = 32, 4  # files fetched at once: in all, for one controller
MB = 1024 * 1024
GCM_TAG = 16


class FileReceiver:
    """Fetches, checks and keeps the files controllers send."""

    def __init__(
        self,
        max_mb: float,
        uploads_dir: Path,
        policy: NetworkPolicy,
        proxy: Callable[[str], Awaitable[str | None]],
        quota: FileQuota,
    ) -> None:
        """``proxy(owner)`` is the egress proxy's URL when the policy applies to ``owner``;
        ``quota`` holds each controller's files (what it sent in counts) and expires them."""
        self.max_mb, self.max_bytes = max_mb, int(max_mb * MB)
        self.uploads_dir, self.policy, self.proxy = uploads_dir, policy, proxy
        self.quota = quota
        self.fetches = Capacity("file fetches", FETCHES, FETCHES_PER_OWNER)

    async def receive(self, owner: str, content: str, tags: list[list[str]]) -> dict[str, Any]:
        """Keep the file the message describes; what the reply says of it."""
        folder = owner_dir(self.uploads_dir, owner)
        # Refused before any fetch when the controller has no room left at all.
        with self.quota.reserve(owner, folder, self.max_bytes, exact=False):
            try:
                message = read_file_message(content, tags)
                async with self.fetches.slot(owner):
                    blob = await self._download(owner, message.url)
                data = unseal(message, blob)  # the blob's bound bounds the file: +16 for GCM
            except Unsealable as exc:
                raise refused(str(exc)) from None
        path = free_name(folder, safe_name(message))
        self.quota.receive(owner, path, data)
        return {
            "received": path.name,
            "size": len(data),
            "type": message.mime,
            "use": f"upload <target> {path.name}",
        }

    async def _download(self, owner: str, url: str) -> bytes:
        """The blob at ``url``, each redirect judged like the first hop."""
        deadline = asyncio.get_running_loop().time() + FETCH_SECONDS
        for _hop in range(MAX_REDIRECTS + 1):
            if urlsplit(url).scheme not in ("http", "https"):
                raise refused("Only http(s) addresses are fetched.")
            reason = await self.policy.check(url, owner)
            if reason is not None:
                raise BrowserdError(ErrorCode.FORBIDDEN, f"{reason} Nothing was kept.")
            try:
                status, location, body = await blossom.fetch(
                    url, self.max_bytes + GCM_TAG, await self.proxy(owner), deadline
                )
            except Overflow:
                raise _too_large(self.max_mb) from None
            except Unreachable as exc:
                raise refused(f"The download from {url} failed ({exc}).") from None
            except TimeoutError:
                raise BrowserdError(
                    ErrorCode.TIMEOUT,
                    f"The download from {url} took over {FETCH_SECONDS:g} s: nothing was kept.",
                ) from None
            if 300 <= status < 400 and location:
                url = urljoin(url, location)
                continue
            if not 200 <= status < 300:
                raise refused(f"The download from {url} failed: HTTP {status}.")
            return body
        raise refused(f"Over {MAX_REDIRECTS} redirects.")


def _too_large(max_mb: float) -> BrowserdError:
    return BrowserdError(
        ErrorCode.TOO_LARGE, f"The file is over {max_mb:g} MB ([files] max_mb): nothing was kept."
    )


def safe_name(message: FileMessage) -> str:
    """The message's ``name`` (its last part only), else one made from the file's hash, with
    the extension its ``file-type`` gives (``free_name`` then cleans what is left)."""
    given = PurePath(message.name.replace("\\", "/")).name if message.name else ""
    stem = PurePath(given).stem if given else f"file-{message.ox[:16]}"
    extension = mimetypes.guess_extension(message.mime.split(";")[0].strip()) or (
        PurePath(given).suffix if given else ".bin"
    )
    return f"{stem or 'file'}{extension}"
