"""``mcp --to NPUB`` over ContextVM: MCP's own JSON-RPC, gift-wrapped to the daemon.

The same calls as ``remote.py``'s DM envelope, in the form every ContextVM server speaks:
``initialize``, then ``tools/list`` (every page) for what this key may run, then one
``tools/call`` per call, each a signed kind 25910 in a kind 1059 gift wrap (CEP-4).  An
answer counts only when its inner event is signed by the daemon and cites the request's
event id; ``notifications/progress`` citing it are the host's progress notices.  The result
is MCP content already, so it goes to the host as it came, but for a large file: each call
asks for those by Blossom link, fetched and checked here (``files.link``).

``--transport auto`` (the default) asks ``initialize`` this way first and uses the DM
envelope when no answer comes within :data:`PROBE_TIMEOUT` (a daemon with ContextVM off, or
an older one), so nothing changes for a daemon that does not speak it.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Collection
from typing import Any

import mcp.types as types

from .. import __version__
from ..errors import BrowserdError, ErrorCode
from ..files.link import inline_result
from ..mcpshape.content import LINK_ASK
from ..nostr import contextvm
from ..nostr.nip01 import Event, now, tag_values
from ..nostr.nip19 import npub_encode
from ..nostr.nip59 import UnwrapError
from ..nostr.relay import Subscription
from ..untrusted_json import json_object
from .backend import Backend, EventSink, Progress, Response
from .remote import CONNECT_TIMEOUT, DaemonLine, failure

log = logging.getLogger(__name__)

PROBE_TIMEOUT = 10.0
"""Seconds ``auto`` waits for a ContextVM ``initialize`` answer before it uses DMs."""
MAX_PAGES = 50  # of tools/list: a server whose cursor never ends is not followed forever


class Silent(Exception):
    """No answer came in time (a stranger's key, a daemon without ContextVM, no relay)."""


class ContextVmBackend(DaemonLine):
    """Talks to one ContextVM server as one agent key."""

    def _begin(self) -> None:
        self._pending: dict[str, asyncio.Queue[dict[str, Any]]] = {}
        self._next_id = 0
        self._allowed: list[str] | None = None

    # --- lifecycle ---------------------------------------------------------------------

    async def start(self) -> None:
        """Connect, listen for answers to us, and introduce ourselves (``initialize``)."""
        await self.connect()
        await self.initialize(self.timeout)

    async def connect(self) -> None:
        """Find the daemon's relays if none were given, connect, subscribe to our wraps."""
        kinds = list(contextvm.WRAP_KINDS)
        await self.listen([{"kinds": kinds, "#p": [self.signer.pubkey], "since": now() - 60}])

    async def initialize(self, timeout: float) -> dict[str, Any]:
        """``initialize`` and ``notifications/initialized``; :class:`Silent` when unanswered."""
        params = {
            "protocolVersion": types.LATEST_PROTOCOL_VERSION,
            "capabilities": {},
            "clientInfo": {"name": "nostr-browserd", "version": __version__},
        }
        answer = await self._request("initialize", params, timeout)
        await self._notify("notifications/initialized")
        return answer.get("result") or {}

    # --- what the agent may do -----------------------------------------------------------

    async def allowed(self) -> Collection[str] | None:
        """The tools the server lists for this key: every page of ``tools/list``."""
        if self._allowed is None:
            names: list[str] = []
            cursor: str | None = None
            for _ in range(MAX_PAGES):
                params = {"cursor": cursor} if cursor else {}
                try:
                    answer = await self._request("tools/list", params, self.timeout)
                except Silent as exc:
                    raise LookupError(str(exc)) from None
                result = answer.get("result") or {}
                names += [t["name"] for t in result.get("tools", []) if "name" in t]
                cursor = result.get("nextCursor")
                if not cursor:
                    break
            self._allowed = names
        return self._allowed

    # --- one call ------------------------------------------------------------------------

    async def call(
        self, tool: str, params: dict[str, Any], progress: Progress
    ) -> Response | types.CallToolResult:
        """``tools/call``: the server's MCP result, or a failure the host can read."""
        request_id = self._new_id()
        meta: dict[str, Any] = {"progressToken": request_id}
        if self.links:
            meta[LINK_ASK] = "link"  # large files by Blossom link
        arguments = {"name": tool, "arguments": params, "_meta": meta}
        try:
            answer = await self._request("tools/call", arguments, self.timeout, progress)
        except Silent as exc:
            return failure(request_id, ErrorCode.UNAVAILABLE, str(exc))
        except ValueError as exc:  # parts that do not make the whole they announced
            return failure(request_id, ErrorCode.INTERNAL, f"A broken reply: {exc}")
        if "error" in answer:
            error = answer["error"] if isinstance(answer["error"], dict) else {}
            return failure(request_id, ErrorCode.INTERNAL, str(error.get("message")))
        try:
            result = types.CallToolResult.model_validate(answer.get("result"))
        except ValueError as exc:
            return failure(request_id, ErrorCode.INTERNAL, f"Not an MCP result: {exc}")
        try:
            return await inline_result(result, self.local)
        except BrowserdError as exc:
            return failure(request_id, exc.code, exc.message)

    def on_event(self, sink: EventSink) -> None:
        """ContextVM carries no pushed browser events: nothing ever reaches ``sink``."""

    # --- the wire ------------------------------------------------------------------------

    def _new_id(self) -> int:
        self._next_id += 1
        return self._next_id

    async def _notify(self, method: str) -> None:
        await self._publish(await self._signed({"jsonrpc": "2.0", "method": method}))

    async def _signed(self, message: dict[str, Any]) -> Event:
        """``message`` as a kind 25910 to the daemon, signed (its id is what answers cite)."""
        content = json.dumps(message, ensure_ascii=False, separators=(",", ":"))
        return await self.signer.sign_event(contextvm.message_template(content, self.daemon))

    async def _publish(self, signed: Event) -> None:
        assert self.pool is not None, "start() first"
        published = await self.pool.publish(contextvm.wrap(signed, self.daemon), CONNECT_TIMEOUT)
        if not published.ok:
            raise Silent(f"No relay took the request ({published.refused}); check the relays.")

    async def _request(
        self,
        method: str,
        params: dict[str, Any],
        timeout: float,
        progress: Progress | None = None,
    ) -> dict[str, Any]:
        """Send one request and wait for the answer citing it (progress notices on the way)."""
        request = {"jsonrpc": "2.0", "id": self._new_id(), "method": method, "params": params}
        inbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        signed = await self._signed(request)
        # Registered before it is published: an answer can come before publish() returns.
        self._pending[signed["id"]] = inbox
        try:
            await self._publish(signed)
            parts = contextvm.Reassembly()  # a result too big for one event (CEP-22)
            async with asyncio.timeout(timeout):
                while True:
                    message = await inbox.get()
                    if message.get("method") != "notifications/progress":
                        return message
                    if contextvm.Reassembly.is_frame(message):
                        whole = parts.take(message)
                        if whole is not None:
                            return json_object(whole) or {}
                    elif progress is not None:
                        await _report(progress, message.get("params") or {})
        except TimeoutError:
            raise Silent(self._silence(timeout)) from None
        finally:
            self._pending.pop(signed["id"], None)

    async def _read(self, sub: Subscription) -> None:
        async for wrap in sub:
            try:
                inner = contextvm.inner_message(
                    await contextvm.unwrap(wrap, self.signer), self.signer.pubkey
                )
            except UnwrapError as exc:
                log.debug("ignored a wrap: %s", exc)
                continue
            if inner["pubkey"] != self.daemon:
                continue  # only the daemon's own signature counts
            message = json_object(inner["content"])
            for cited in tag_values(inner, "e"):
                if cited in self._pending and message is not None:
                    self._pending[cited].put_nowait(message)

    def _silence(self, timeout: float) -> str:
        return (
            f"The daemon did not answer over ContextVM within {timeout:g} s. It never answers a"
            f" key that is not on its allow-list: its owner must allow"
            f" {npub_encode(self.signer.pubkey)}. If it is allowed, check that the daemon runs"
            f" with ContextVM on and reads {', '.join(self.pool.urls if self.pool else [])}."
        )


class AutoBackend:
    """``--transport auto``: ContextVM when the daemon answers its ``initialize``, else DMs.

    The DM backend listens either way: the events a ``watch`` forwards come by DM.
    """

    def __init__(
        self, cvm: ContextVmBackend, dm: Backend, probe_timeout: float = PROBE_TIMEOUT
    ) -> None:
        self.cvm, self.dm, self.probe_timeout = cvm, dm, probe_timeout
        self.chosen: Backend = dm

    async def start(self) -> None:
        """Probe once; the chosen backend serves every call after that."""
        await self.dm.start()
        await self.cvm.connect()
        try:
            await self.cvm.initialize(self.probe_timeout)
        except Silent:
            await self.cvm.close()
            log.info("no ContextVM answer from %s: using direct messages", self.cvm.daemon[:12])
            return
        log.info("%s speaks ContextVM: using it", self.cvm.daemon[:12])
        self.chosen = self.cvm

    async def close(self) -> None:
        if self.chosen is self.cvm:
            await self.cvm.close()
        await self.dm.close()

    async def allowed(self) -> Collection[str] | None:
        return await self.chosen.allowed()

    async def call(
        self, tool: str, params: dict[str, Any], progress: Progress
    ) -> Response | types.CallToolResult:
        return await self.chosen.call(tool, params, progress)

    def on_event(self, sink: EventSink) -> None:
        self.dm.on_event(sink)  # ContextVM pushes none; the DM backend forwards watched events


async def _report(progress: Progress, params: dict[str, Any]) -> None:
    try:
        total = params.get("total")
        await progress(
            float(params.get("progress") or 0),
            float(total) if isinstance(total, int | float) else None,
            str(params.get("message") or ""),
        )
    except Exception as exc:  # the host went away: the call itself will tell
        log.debug("progress not delivered: %s", exc)
