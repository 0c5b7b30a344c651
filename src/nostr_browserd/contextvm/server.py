"""The daemon as a ContextVM server: MCP's JSON-RPC in kind 25910, for allow-listed keys.

A message reaches this module the way a DM reaches the dispatcher, through the DM inbox
(``dm/inbox.py``): gift-wrapped (CEP-4, or CEP-19's ephemeral wrap), its sender the inner
event's signature, allow-listed, claimed once by the replay guard (so a replay is never
answered twice), fresh.  A stranger's message never gets here, so it gets no answer; a
plaintext kind 25910 is not even read.  Then:

- ``initialize``, ``ping`` and ``tools/list`` are answered here; the list is ``help``'s for
  the caller's role (``role_catalog``), each tool as MCP lists it (``mcpshape.listing``).
  Nothing is kept per client, so a client that skips ``initialize`` (CEP-35) is served too;
- ``tools/call`` becomes the protocol's ``{"id", "tool", "params"}`` (the JSON-RPC id as its
  id; ``"files": "link"`` when its ``_meta`` asks for large files by Blossom link, as
  ``mcp --to`` does: ``files.link``) and goes to the dispatcher like a DM: the controller's
  queue, the held row that makes it exactly-once across restarts, the role check, the
  approver, the timeout and the audit are the dispatcher's, as for every transport;
- the dispatcher's answer comes back through :meth:`ContextVmServer.reply`: the notice that a
  gated call waits for its approver becomes a ``notifications/progress`` (when the call gave
  a ``progressToken``), the response an MCP result (``mcpshape.content``, every file in
  it: a resource link would point at a shelf the caller cannot read), sent as a signed
  kind 25910 citing the request, in the kind of wrap the request came in;
- notifications are taken and ignored; anything that is not JSON-RPC is dropped and logged.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Collection
from dataclasses import dataclass, replace
from typing import Any, Protocol

import mcp_types as types

from .. import __version__
from ..commands.registry import Registry
from ..dm.messages import Incoming, ReplyAddress, is_dm
from ..dm.pending import as_pending
from ..mcpshape.content import LINK_ASK, to_result
from ..mcpshape.listing import mcp_tool
from ..nostr import contextvm
from ..nostr.nip01 import Event, now
from ..nostr.nip59 import GIFT_WRAP_KIND
from ..nostr.signer import Signer
from ..ratelog import RateLimitedLog
from ..untrusted_json import json_object

log = logging.getLogger(__name__)

CAPABILITY_TAGS = [
    [contextvm.SUPPORT_ENCRYPTION],
    [contextvm.SUPPORT_ENCRYPTION_EPHEMERAL],
    [contextvm.SUPPORT_OVERSIZED_TRANSFER],
]
"""On every answer (CEP-4, CEP-19): a stateless client learns them from its first one."""
METHOD_NOT_FOUND, INVALID_PARAMS, INVALID_REQUEST = -32601, -32602, -32600
PAGE_BYTES = 40_000  # of a tools/list page, leaving room for the event and NIP-44's limit
PROGRESS_KEPT = 1024  # calls whose progressToken is remembered until their answer
PROGRESS_EVERY = 5.0  # seconds between progress notices while a call waits for approval
INSTRUCTIONS = (
    "A headless browser. Start with open (a URL), then snapshot to read the page and its"
    " element refs; click, fill and the others take a ref. Calls that change a page may wait"
    " for the owner's approval."
)

Publish = Callable[[Event], Awaitable[bool]]
Listing = Callable[[str], Collection[str]]


class Dispatcher(Protocol):
    """What the server hands on: the daemon's dispatcher (the one policy of every transport)."""

    def submit(self, incoming: Incoming) -> None:
        """Queue an authenticated command (or its refusal) for its controller."""
        ...


@dataclass(frozen=True)
class ServerInfo:
    """What ``initialize`` and an announcement say of the server."""

    name: str
    about: str = ""
    picture: str = ""
    website: str = ""


class ContextVmServer:
    """Answers ContextVM messages; hands tool calls to the dispatcher.

    It stands where the dispatcher stands for the inbox (``submit``): a DM goes
    on to the dispatcher untouched, a ContextVM message is read here first.
    """

    def __init__(
        self,
        signer: Signer,
        *,
        dispatcher: Dispatcher,
        registry: Registry,
        listing: Listing,
        publish: Publish,
        info: ServerInfo,
    ) -> None:
        """``listing(pubkey)``: the tool names that key's role lists (``help``'s);
        ``publish`` sends a signed event to the daemon's relays, True when one took it."""
        self.signer, self.dispatcher, self.registry = signer, dispatcher, registry
        self.listing, self.publish, self.info = listing, publish, info
        self.dropped = RateLimitedLog(log)
        self._progress: OrderedDict[str, str | int] = OrderedDict()
        self._tasks: set[asyncio.Task[bool]] = set()
        self._tickers: dict[str, asyncio.Future[None]] = {}  # calls waiting for approval

    # --- the inbox's receiver -------------------------------------------------------------

    def submit(self, incoming: Incoming) -> None:
        """A DM goes to the dispatcher; a ContextVM message is read here."""
        if is_dm(incoming.scheme):
            self.dispatcher.submit(incoming)
            return
        message = json_object(incoming.content)
        if message is None or message.get("jsonrpc") != "2.0" or "method" not in message:
            self.dropped.warning(
                "malformed",
                "dropped a ContextVM message from %s: not a JSON-RPC request or notification",
                incoming.sender[:12],
            )
            return
        if "id" not in message:
            return  # notifications/initialized, cancelled, …: nothing to answer
        call = self._tool_call(incoming, message)
        if call is not None:
            self.dispatcher.submit(call)
            return
        # Answered without holding up the inbox; referenced until sent.
        task = asyncio.ensure_future(self._send(incoming, self._answer(incoming, message)))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _tool_call(self, incoming: Incoming, message: dict[str, Any]) -> Incoming | None:
        """``tools/call`` as the protocol's request, for the dispatcher; None for any other
        method, or a call without a tool name (answered here as invalid)."""
        params = message.get("params")
        if message["method"] != "tools/call" or not isinstance(params, dict):
            return None
        if not isinstance(params.get("name"), str):
            return None
        meta: dict[str, Any] = params["_meta"] if isinstance(params.get("_meta"), dict) else {}
        token = meta.get("progressToken")
        if isinstance(token, str | int):
            self._progress[incoming.event_id] = token
            while len(self._progress) > PROGRESS_KEPT:
                self._progress.popitem(last=False)
        request = {"id": message["id"], "tool": params["name"]}
        request["params"] = params.get("arguments") or {}
        if meta.get(LINK_ASK) == "link":  # mcp --to: a large file by Blossom link
            request["files"] = "link"
        return replace(incoming, content=json.dumps(request, ensure_ascii=False))

    def _answer(self, incoming: Incoming, message: dict[str, Any]) -> dict[str, Any]:
        """The JSON-RPC response to a request the dispatcher does not run."""
        method, request_id = message["method"], message["id"]
        if incoming.refusal is not None:
            return _error(request_id, INVALID_REQUEST, incoming.refusal.message)
        if method == "initialize":
            return _result(request_id, self.initialize_result(message.get("params")))
        if method == "ping":
            return _result(request_id, {})
        if method == "tools/list":
            cursor = (message.get("params") or {}).get("cursor")
            names = self.listing(incoming.sender)
            return _result(request_id, self.tools(names, cursor if isinstance(cursor, str) else ""))
        if method == "tools/call":
            return _error(request_id, INVALID_PARAMS, "tools/call needs params.name, a string")
        return _error(request_id, METHOD_NOT_FOUND, f"{method} is not served here")

    def initialize_result(self, params: object = None) -> dict[str, Any]:
        """Our half of ``initialize``: the client's protocol version when it names one."""
        asked = params.get("protocolVersion") if isinstance(params, dict) else None
        return {
            "protocolVersion": asked if isinstance(asked, str) else types.LATEST_PROTOCOL_VERSION,
            "capabilities": {"tools": {"listChanged": False}},
            "serverInfo": {"name": self.info.name, "version": __version__},
            "instructions": INSTRUCTIONS,
        }

    def tools(self, names: Collection[str], cursor: str = "") -> dict[str, Any]:
        """A page of the ``tools/list`` result of ``names``, in the registry's order.

        Every tool at once is about 100 KB, and one message holds 64 KiB, so the list comes
        in pages (MCP's ``nextCursor``: the index of the next tool), each within
        :data:`PAGE_BYTES`.  ``cursor`` "" is the first page; one that is not ours starts
        over, which a client that pages on sees as a repeat, not a hole.
        """
        listed = [_dump(mcp_tool(t)) for t in self.registry if t.name in names]
        start = int(cursor) if cursor.isdigit() and int(cursor) < len(listed) else 0
        page: list[dict[str, Any]] = []
        size = 0
        for tool in listed[start:]:
            size += len(json.dumps(json.dumps(tool)))  # as it travels: a string in content
            if page and size > PAGE_BYTES:
                return {"tools": page, "nextCursor": str(start + len(page))}
            page.append(tool)
        return {"tools": page}

    # --- answers from the dispatcher -------------------------------------------------------

    async def reply(self, to: ReplyAddress, wire: str, request_id: Any) -> bool:
        """The dispatcher's answer to a ``tools/call``: a progress notice or the result."""
        pending = as_pending(wire)
        if pending is not None:
            token = self._progress.get(to.event_id)
            if token is None:
                return True  # the call asked for no progress: it just waits for its result
            expires = float(pending.get("expires_in") or 0)
            ticking = asyncio.ensure_future(self._tick(to, token, expires))
            self._tickers[to.event_id] = ticking
            return True
        ticker = self._tickers.pop(to.event_id, None)
        if ticker is not None:
            ticker.cancel()
        token = self._progress.pop(to.event_id, None)
        response = json_object(wire) or {"success": False, "error": {"message": wire}}
        # No shelf: nothing here serves resources/read, so every file goes in the result.
        result = _dump(to_result(response, None))
        return await self._send(to, _result(request_id, result), token)

    async def _tick(self, to: ReplyAddress, token: str | int, expires: float) -> None:
        """Progress every few seconds while the approver decides (what ``mcp --to`` says over
        DMs): a host that times out idle calls keeps waiting, and the agent sees the time
        left."""
        started = asyncio.get_running_loop().time()
        while True:
            waited = asyncio.get_running_loop().time() - started
            left = max(0, round(expires - waited))
            params = {
                "progressToken": token,
                "progress": waited,
                "total": expires,
                "message": f"waiting for approval on the approver's phone, {left} s left",
            }
            message = {"jsonrpc": "2.0", "method": "notifications/progress", "params": params}
            await self._send(to, message)
            await asyncio.sleep(PROGRESS_EVERY)

    async def _send(
        self, to: ReplyAddress, message: dict[str, Any], token: str | int | None = None
    ) -> bool:
        """Sign ``message`` as a kind 25910 citing the request and wrap it as it came.

        A message too big for one wrap goes as CEP-22 frames under the call's
        ``progressToken``; without one, it is replaced by an error that says so.
        """
        event = await self._signed(to, message)
        if contextvm.fits(event):
            return await self._publish(to, event)
        if token is not None:
            serialized = json.dumps(message, ensure_ascii=False, separators=(",", ":"))
            for frame in contextvm.oversized_frames(serialized, token):
                if not await self._publish(to, await self._signed(to, frame)):
                    return False
            return True
        size = len(event["content"].encode())
        text = (
            f"TOO_LARGE: the result is {size} bytes, more than one ContextVM message holds"
            " (64 KiB), and the call gave no progressToken to send it in parts (CEP-22). Ask"
            " for less (a screenshot of an element, a snapshot of part of the page), or call"
            " with a progressToken."
        )
        failed = {"content": [{"type": "text", "text": text}], "isError": True}
        return await self._publish(to, await self._signed(to, _result(message.get("id"), failed)))

    async def _publish(self, to: ReplyAddress, event: Event) -> bool:
        kind = GIFT_WRAP_KIND if to.scheme == "contextvm" else contextvm.EPHEMERAL_WRAP_KIND
        try:
            return await self.publish(contextvm.wrap(event, to.sender, kind))
        except Exception:
            log.exception("could not send a ContextVM answer to %s", to.sender[:12])
            return False

    async def _signed(self, to: ReplyAddress, message: dict[str, Any]) -> Event:
        content = json.dumps(message, ensure_ascii=False, separators=(",", ":"))
        template = contextvm.message_template(content, to.sender, to.event_id, CAPABILITY_TAGS)
        return await self.signer.sign_event(template)

    def close(self) -> None:
        """Stop every progress ticker (the identity's link is going down)."""
        for ticker in self._tickers.values():
            ticker.cancel()
        self._tickers.clear()

    # --- announcements (CEP-6), opt-in -----------------------------------------------------

    async def announce(self, names: Collection[str]) -> None:
        """Publish kind 11316 (who we are, the init result) and 11317 (``names`` as tools)."""
        info = self.info
        tags = [[k, v] for k, v in _info_tags(info) if v] + CAPABILITY_TAGS
        templates = [
            (contextvm.SERVER_ANNOUNCEMENT_KIND, self.initialize_result(), tags),
            (contextvm.TOOLS_LIST_KIND, self.tools(names), []),
        ]
        for kind, content, kind_tags in templates:
            template = {
                "kind": kind,
                "content": json.dumps(content, ensure_ascii=False),
                "tags": kind_tags,
                "created_at": now(),
            }
            try:
                if not await self.publish(await self.signer.sign_event(template)):
                    log.warning("no relay took the ContextVM announcement (kind %s)", kind)
            except Exception:
                log.exception("could not announce kind %s", kind)


def _info_tags(info: ServerInfo) -> list[tuple[str, str]]:
    return [
        ("name", info.name),
        ("about", info.about),
        ("picture", info.picture),
        ("website", info.website),
    ]


def _result(request_id: Any, result: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def _error(request_id: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


def _dump(model: types.Tool | types.CallToolResult) -> dict[str, Any]:
    return model.model_dump(by_alias=True, exclude_none=True, mode="json")
