"""Files out: a text command's file also reaches a NIP-17 chat, as a kind 15 file message.

A result that carries bytes (``base64``: a screenshot, a PDF, a download, a recording) is
encrypted (:mod:`.sealed`), put on the first configured Blossom server that takes it, and
sent as a kind 15 citing the request, before the text reply; the text reply then names the
file instead of saying to ask in JSON.  Faults lose the file, never the reply: a server that
refuses or is down is skipped for the next, and when none takes it the text reply names each
server and its answer and says how to get the bytes in JSON.  The reply does not wait on a
slow server: after :data:`REPLY_WAITS` seconds it goes, saying the file follows, and the
file message (or a message saying why none came) follows it.  A NIP-04 chat cannot carry a
file message, so it gets today's line and a sentence saying so.  A JSON request keeps its
base64: MCP hosts and scripts read it; only one that asks (``mcp --to``) gets a large file as
a sealed Blossom link instead (:mod:`.link`).

Each blob is deleted after ``[files] keep`` (BUD-12); the list is in the state store, so a
restart deletes what the last run uploaded.  A controller that watches ``screen`` also gets
the page's annotated screenshot after each command that changes it (:mod:`.watch`).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
import logging
import mimetypes
import struct
import time
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from ..capacity import Capacity
from ..commands.protocol import Request
from ..commands.render import human_size
from ..dm.messages import ReplyAddress
from ..errors import BrowserdError
from ..nostr.nip01 import now
from ..nostr.signer import Signer
from ..waits import set_within
from . import blossom
from .link import LINK_AT_LEAST, link_of
from .sealed import Sealed, file_tags, seal
from .watch import ScreenWatch

log = logging.getLogger(__name__)

SERVER_LIST_KIND = 10063  # BUD-03
NIP04_NOTE = (
    "Files come as file messages over NIP-17 only: write to this daemon in a NIP-17 chat to"
    " see them."
)
CLEANUP_AT_MOST = 3600.0  # the longest the cleanup sleeps before it looks again
REPLY_WAITS = 3.0  # seconds a text reply waits for its file's upload before it goes alone
UPLOADS, UPLOADS_PER_OWNER = 16, 4  # Blossom uploads at once: in all, for one controller
SCREEN_REQUEST = Request(tool="screenshot_annotated")  # how watch screen's pictures are asked
Response = dict[str, Any]
SendFile = Callable[[ReplyAddress, str, list[list[str]]], Awaitable[bool]]
SendText = Callable[[ReplyAddress, str], Awaitable[bool]]


class FileSettings(Protocol):
    """What this side reads of ``[files]``."""

    @property
    def blossom_servers(self) -> list[str]: ...

    @property
    def keep(self) -> float: ...


class KeptBlobs(Protocol):
    """The blobs uploaded and not yet deleted (the daemon's state store)."""

    async def keep_blob(self, server: str, sha256: str, expires: float) -> None: ...

    async def due_blobs(self, at: float) -> list[tuple[str, str]]: ...

    async def next_blob_due(self) -> float | None: ...

    async def forget_blob(self, server: str, sha256: str) -> None: ...


class FileSender:
    """Uploads results' files, sends their file messages, and deletes them when due."""

    def __init__(
        self,
        settings: FileSettings,
        kept: KeptBlobs,
        signer: Callable[[], Signer | None],
        send: SendFile,
        say: SendText,
        screen: ScreenWatch | None = None,
    ) -> None:
        """``send`` sends a file message, ``say`` a text (a late file's failure); ``screen``
        takes the pictures of ``watch screen`` (None: no such pictures)."""
        self.settings, self.kept = settings, kept
        self.signer, self.send, self.say, self.screen = signer, send, say, screen
        self._uploaded = asyncio.Event()  # wakes the cleanup: a new blob may be due first
        self._late: set[asyncio.Task[None]] = set()  # files that follow their text reply
        self.uploads = Capacity("Blossom uploads", UPLOADS, UPLOADS_PER_OWNER)

    def server_list(self) -> dict[str, Any] | None:
        """Kind 10063 (BUD-03), published with the daemon's announcements; None without."""
        servers = self.settings.blossom_servers
        if not servers:
            return None
        tags = [["server", url] for url in servers]
        return {"kind": SERVER_LIST_KIND, "content": "", "tags": tags, "created_at": now()}

    async def attach(self, to: ReplyAddress, request: Request, response: Response) -> Response:
        """``response`` as the text reply to ``request`` should show it, after sending its file
        (if it has one); for a JSON request that asked for a link, with its file by link
        (:meth:`link`).  Never raises: whatever goes wrong, the reply still goes."""
        try:
            return await self._attach(to, request, response)
        except Exception:
            log.exception("could not send the file of %s", request.tool)
            return response

    async def _attach(self, to: ReplyAddress, request: Request, response: Response) -> Response:
        if request.files == "link":
            return await self.link(to.sender, request, response)
        data = response.get("data")
        if not response.get("success") or not isinstance(data, dict):
            return response
        if to.scheme == "nip04":
            if not isinstance(data.get("base64"), str):
                return response
            note = " ".join(filter(None, [data.get("note"), NIP04_NOTE]))
            return {**response, "data": {**data, "note": note}}
        if not self.settings.blossom_servers:
            return response
        shown = await self._file_of(to, request, data)
        if isinstance(data.get("sheet"), dict):  # a recording's steps, a second picture
            sheet = await self._file_of(to, request, data["sheet"])
            shown = {**shown, "sheet": sheet.get("file")}
        if self.screen is not None:
            shot = await self.screen.after(to.sender, request, response)
            if shot is not None:
                picture = await self._file_of(to, SCREEN_REQUEST, shot["data"])
                shown = {**shown, "screen": picture.get("file"), "legend": picture.get("legend")}
        return {**response, "data": shown}

    async def _file_of(
        self, to: ReplyAddress, request: Request, data: dict[str, Any]
    ) -> dict[str, Any]:
        """``data`` with its bytes sent as a file message and named by a ``file`` line."""
        content = _bytes_of(data)
        if content is None:
            return data
        shown = {k: v for k, v in data.items() if k not in ("base64", "mime", "bytes")}
        shown["file"] = await self._deliver(to, request, content, data)
        return shown

    async def _deliver(
        self, to: ReplyAddress, request: Request, content: bytes, data: dict[str, Any]
    ) -> str:
        """Upload and send one file; the line the text reply shows for it.  An upload still
        going after :data:`REPLY_WAITS` goes on alone: the file follows the reply, or a
        message saying why it did not."""
        mime = _mime_of(data)
        what = f"{mime.split('/')[-1]}, {human_size(len(content))}"
        signer = self.signer()
        if signer is None:
            return f"{what}: not sent (no identity to sign the upload)"
        sending = asyncio.create_task(self._send_file(to, request, signer, content, data, mime))
        try:
            await asyncio.wait({sending}, timeout=REPLY_WAITS)
        except asyncio.CancelledError:  # the command itself was stopped: so is its file
            sending.cancel()
            raise
        if sending.done():
            return f"{what}: {sending.result()[1]}"
        late = asyncio.create_task(self._follow(to, request, what, sending))
        self._late.add(late)
        late.add_done_callback(self._late.discard)
        return f"{what}: still uploading; it follows as a file message"

    async def _follow(
        self,
        to: ReplyAddress,
        request: Request,
        what: str,
        sending: asyncio.Task[tuple[bool, str]],
    ) -> None:
        """After a reply that said its file follows: the text saying why, if it did not."""
        try:
            sent, line = await sending
        except asyncio.CancelledError:
            sending.cancel()
            raise
        except Exception:
            log.exception("could not send the file of %s", request.tool)
            sent, line = False, "not sent (an internal error; the daemon logged it)"
        if not sent:
            await self.say(to, f"The file of {request.tool} ({what}): {line}")

    async def _send_file(
        self,
        to: ReplyAddress,
        request: Request,
        signer: Signer,
        content: bytes,
        data: dict[str, Any],
        mime: str,
    ) -> tuple[bool, str]:
        """Upload ``content`` to the first server that takes it and send its file message:
        whether it went, and what to tell the person."""
        sealed = seal(content)
        try:
            put = await self._put(to.sender, signer, sealed)
        except BrowserdError as exc:  # BUSY: this controller's uploads are all under way
            return False, f"not sent: {exc.message}"
        if isinstance(put, list):
            return False, (
                f"not sent: no Blossom server took it ({'; '.join(put)}). For the data, "
                f"send the command in JSON: {request_json(request)}"
            )
        server, url = put
        dim = dimensions(content, mime) or data.get("dim")  # a video says its own
        tags = file_tags(sealed, mime, dim if isinstance(dim, str) else None)
        if isinstance(data.get("name"), str):
            tags.append(["name", data["name"]])
        if await self.send(to, url, tags):
            return True, "sent as a file message"
        return False, f"uploaded to {server}, but no relay took the file message"

    async def _put(self, owner: str, signer: Signer, sealed: Sealed) -> tuple[str, str] | list[str]:
        """The server that took ``sealed`` and its URL; or, when none did, each one's answer.
        ``BUSY`` when ``owner`` already has its share of uploads under way."""
        answers: list[str] = []
        async with self.uploads.slot(owner):
            for server in self.settings.blossom_servers:
                try:
                    return server, await self._upload(signer, server, sealed)
                except blossom.BlossomError as exc:
                    answers.append(f"{exc.server} answered {exc.answer}")
                    log.warning("blossom %s refused a file: %s", exc.server, exc.answer)
        return answers

    async def link(self, owner: str, request: Request, response: Response) -> Response:
        """``response`` to a JSON request that asked for files by link (``mcp --to``): a file
        of at least ``LINK_AT_LEAST`` bytes sealed on Blossom, its link in place of its
        base64 (:mod:`.link`).  When it cannot be, the response as it is (the file goes in
        parts), and the log says why."""
        data = response.get("data")
        if not response.get("success") or not isinstance(data, dict):
            return response
        content = _bytes_of(data)
        if content is None or len(content) < LINK_AT_LEAST or not self.settings.blossom_servers:
            return response
        signer = self.signer()
        if signer is None:
            log.warning("the file of %s goes in parts: no identity signs uploads", request.tool)
            return response
        sealed = seal(content)
        try:
            put = await self._put(owner, signer, sealed)
        except BrowserdError as exc:
            put = [exc.message]
        if isinstance(put, list):
            log.warning(
                "the file of %s goes in parts: no Blossom server took it (%s)",
                request.tool,
                "; ".join(put),
            )
            return response
        mime = _mime_of(data)
        rest = {k: v for k, v in data.items() if k != "base64"}
        linked = link_of(put[1], sealed, mime, dimensions(content, mime))
        return {**response, "data": {**rest, "link": linked}}

    async def close(self) -> None:
        """Drop the files still uploading after their replies (the daemon stops)."""
        for task in self._late:
            task.cancel()
        await asyncio.gather(*self._late, return_exceptions=True)

    async def _upload(self, signer: Signer, server: str, sealed: Sealed) -> str:
        try:
            auth = await blossom.authorization(signer, "upload", sealed.x, "Upload a file", server)
        except BrowserdError as exc:  # a bunker that did not sign
            raise blossom.BlossomError(server, f"no signature ({exc.message})") from None
        url = await blossom.upload(server, sealed.blob, sealed.x, auth)
        try:
            await self.kept.keep_blob(server, sealed.x, time.time() + self.settings.keep)
        except BrowserdError as exc:
            log.error("blob %s on %s will not be deleted: %s", sealed.x[:12], server, exc.message)
        self._uploaded.set()
        return url

    async def clean_up(self) -> None:
        """Delete blobs when their time is up; runs forever (one server down is retried)."""
        while True:
            await self.delete_due()
            try:
                due = await self.kept.next_blob_due()
            except BrowserdError as exc:
                log.error("%s", exc.message)
                due = None
            wait = CLEANUP_AT_MOST if due is None else min(CLEANUP_AT_MOST, due - time.time())
            self._uploaded.clear()
            if wait > 0:
                await set_within(self._uploaded, wait)

    async def delete_due(self) -> int:
        """Delete what is due now (BUD-12); how many went.  A failure stays for next time."""
        signer = self.signer()
        if signer is None:
            return 0
        try:
            due = await self.kept.due_blobs(time.time())
        except BrowserdError as exc:
            log.error("%s", exc.message)
            return 0
        gone = 0
        for server, sha256 in due:
            try:
                auth = await blossom.authorization(
                    signer, "delete", sha256, "Delete a file", server
                )
                await blossom.delete(server, sha256, auth)
                await self.kept.forget_blob(server, sha256)
                gone += 1
            except (blossom.BlossomError, BrowserdError) as exc:
                log.warning("could not delete blob %s from %s: %s", sha256[:12], server, exc)
        return gone


def _bytes_of(data: dict[str, Any]) -> bytes | None:
    """The file a result carries (its ``base64``), or None."""
    raw = data.get("base64")
    try:
        return base64.b64decode(raw, validate=True) if isinstance(raw, str) else None
    except (binascii.Error, ValueError):
        return None


def _mime_of(data: dict[str, Any]) -> str:
    """A result's file type: as given, else from its name."""
    name = data.get("name")
    guessed = mimetypes.guess_type(name)[0] if isinstance(name, str) else None
    return str(data.get("mime") or guessed or "application/octet-stream")


def dimensions(data: bytes, mime: str) -> str | None:
    """``WxH`` of a PNG or JPEG (read from its header), else None."""
    if mime == "image/png" and data[12:16] == b"IHDR":
        width, height = struct.unpack(">II", data[16:24])
        return f"{width}x{height}"
    if mime == "image/jpeg":
        return _jpeg_dimensions(data)
    return None


def _jpeg_dimensions(data: bytes) -> str | None:
    """The size in a JPEG's start-of-frame segment."""
    at = 2
    while at + 9 < len(data) and data[at] == 0xFF:
        marker, length = data[at + 1], struct.unpack(">H", data[at + 2 : at + 4])[0]
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
            height, width = struct.unpack(">HH", data[at + 5 : at + 9])
            return f"{width}x{height}"
        at += 2 + length
    return None


def request_json(request: Request) -> str:
    """The request as JSON, for a reply that says how to get its bytes that way."""
    asked = {"tool": request.tool, "params": request.params}
    return json.dumps(asked, ensure_ascii=False)
