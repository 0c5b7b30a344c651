"""``mcp --local``'s MCP session on a pipe, in plain JSON-RPC lines: no MCP SDK.

A host starts ``mcp --local`` once per session and waits for its first answer.  The SDK's
server side took 0.3 s of CPU to import (its wire types, their validators for two protocol
versions, the HTTP stack its low-level server imports), with the GIL held while Chromium
started; the host waited for it.  A local session needs none of it: this one speaks what a
host asks of ``mcp --local`` over a pipe (``initialize`` in the handshake's versions,
``ping``, ``tools/list``, ``tools/call`` with its progress, ``resources/list`` and
``resources/read`` of the shelf, ``logging/setLevel``, a client's ``notifications/cancelled``)
and tells it the browser's events as ``notifications/message``.  The content is
:mod:`..mcpshape.wire`'s, the same dicts the SDK's servers validate into its types.

As the SDK's session here does (:mod:`.in_flight`), the input's end closes the session only
once every request read has been answered (a cancelled one excepted), and a line that is no
JSON-RPC message gets its error (parse error, invalid request) with a null id.

``--to``, ``--http`` and a terminal or a file on stdin keep the SDK's server (:mod:`.server`).
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import TYPE_CHECKING, Any, TypeGuard

from .. import __version__
from ..catalog import REGISTRY
from ..commands.registry import Registry
from ..mcpshape import wire
from ..mcpshape.selection import Selection, listed
from ..untrusted_json import loads
from .host_facing import INSTRUCTIONS, LEVELS, Level, event_notice
from .pipes import pipes

if TYPE_CHECKING:
    from .local import LocalBackend

log = logging.getLogger(__name__)

HANDSHAKE_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
"""The protocol versions ``initialize`` agrees to, oldest first (the SDK's handshake ones)."""
PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS, INTERNAL_ERROR = (
    -32700,
    -32600,
    -32601,
    -32602,
    -32603,
)
CAPABILITIES = {
    "logging": {},
    "resources": {"listChanged": False, "subscribe": False},
    "tools": {"listChanged": False},
}
RequestId = str | int
MAX_DEPTH = 100  # nesting of a message's JSON: past it, a parse error (not a RecursionError)


class Refusal(Exception):
    """A request answered with a JSON-RPC error."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code, self.message = code, message


class PlainMcp:
    """One MCP server over the local backend, on this process's stdin and stdout."""

    def __init__(
        self,
        backend: LocalBackend,
        selection: Selection | None = None,
        registry: Registry = REGISTRY,
        name: str = "nostr-browserd",
    ) -> None:
        self.backend, self.registry, self.name = backend, registry, name
        self.selection = selection or Selection()
        self.selection.check(registry)
        self.shelf = wire.Shelf()
        self._level: Level = "info"
        self._writer: asyncio.StreamWriter | None = None  # once serving: the host's wire
        self._greeted = False  # events go to a host once it has said initialize
        self._running: dict[RequestId, asyncio.Task[None]] = {}
        backend.on_event(self._event)

    async def run_stdio(self) -> None:
        """Serve one host over stdin/stdout (both pipes) until it closes its end."""
        async with pipes() as (reader, writer):
            self._writer = writer
            await self.backend.start()
            try:
                await self.serve(reader)
            finally:
                await self.backend.close()

    async def serve(self, reader: asyncio.StreamReader) -> None:
        """Take each line as it comes; at the end, wait for the answers still owed."""
        while True:
            try:
                line = await reader.readline()
            except ValueError as exc:  # longer than the line limit: what was read is dropped
                self._refuse(PARSE_ERROR, f"Parse error: {exc}")
                continue
            if not line:
                break
            self._take(line)
        while self._running:
            await asyncio.wait(list(self._running.values()))

    # --- the wire ----------------------------------------------------------------------

    def _take(self, line: bytes) -> None:
        """One line: a request starts its answer, a notification is heeded, an answer to us
        (we ask nothing) is dropped, anything else is refused."""
        if not line.strip():
            return  # a blank line (a file's last one, say) asks nothing
        try:
            message = loads(line, MAX_DEPTH)
        except ValueError as exc:
            self._refuse(PARSE_ERROR, f"Parse error: {exc}")
            return
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            self._refuse(INVALID_REQUEST, "Invalid Request: not a JSON-RPC message")
            return
        method, request_id = message.get("method"), message.get("id")
        params = message.get("params")
        if not isinstance(params, dict):
            params = {}
        if isinstance(method, str) and "id" not in message:
            self._heed(method, params)
        elif isinstance(method, str) and _is_id(request_id):
            task = asyncio.ensure_future(self._answer(request_id, method, params))
            self._running[request_id] = task
            task.add_done_callback(lambda _: self._answered(request_id, task))
        elif method is None and _is_id(request_id) and ("result" in message or "error" in message):
            return
        else:
            self._refuse(INVALID_REQUEST, "Invalid Request: not a JSON-RPC message")

    def _answered(self, request_id: RequestId, task: asyncio.Task[None]) -> None:
        if self._running.get(request_id) is task:
            del self._running[request_id]

    def _heed(self, method: str, params: dict[str, Any]) -> None:
        """A notification: a cancelled request is cancelled and owes no answer any more."""
        request_id = params.get("requestId")
        if method == "notifications/cancelled" and _is_id(request_id):
            task = self._running.pop(request_id, None)
            if task is not None:
                task.cancel()

    async def _answer(self, request_id: RequestId, method: str, params: dict[str, Any]) -> None:
        try:
            message: dict[str, Any] = {"result": await self._handle(method, params)}
        except Refusal as refusal:
            message = {"error": {"code": refusal.code, "message": refusal.message}}
        except Exception as exc:
            log.exception("%s failed", method)
            message = {"error": {"code": INTERNAL_ERROR, "message": f"{method} failed: {exc}"}}
        await self._send({"jsonrpc": "2.0", "id": request_id, **message})

    def _refuse(self, code: int, message: str) -> None:
        """A line that could not be read: its error goes out with a null id."""
        self._write({"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}})

    def _write(self, message: dict[str, Any]) -> bool:
        """Put ``message`` on the wire; False when the host is gone."""
        writer = self._writer
        if writer is None or writer.is_closing():
            return False
        text = json.dumps(message, ensure_ascii=False, separators=(",", ":"), default=str)
        writer.write(text.encode() + b"\n")
        return True

    async def _send(self, message: dict[str, Any]) -> None:
        """Put ``message`` on the wire and wait while the host is slow to read it."""
        if self._write(message):
            assert self._writer is not None
            try:
                await self._writer.drain()
            except ConnectionError:
                log.debug("the host closed its end before an answer went out")

    # --- the methods -------------------------------------------------------------------

    async def _handle(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        if method == "initialize":
            return self._initialize(params)
        if method == "ping":
            return {}
        if method == "tools/list":
            allowed = await self.backend.allowed()
            tools = listed(self.registry, self.selection, allowed)
            return {"tools": [wire.tool_entry(t) for t in tools]}
        if method == "tools/call":
            return await self._call_tool(params)
        if method == "resources/list":
            return {"resources": self.shelf.resources()}
        if method == "resources/read":
            return self._read_resource(params)
        if method == "logging/setLevel":
            return self._set_level(params)
        raise Refusal(METHOD_NOT_FOUND, f"Method not found: {method}")

    def _initialize(self, params: dict[str, Any]) -> dict[str, Any]:
        asked = params.get("protocolVersion")
        self._greeted = True
        return {
            "protocolVersion": asked if asked in HANDSHAKE_VERSIONS else HANDSHAKE_VERSIONS[-1],
            "capabilities": CAPABILITIES,
            "serverInfo": {"name": self.name, "version": __version__},
            "instructions": INSTRUCTIONS,
        }

    async def _call_tool(self, params: dict[str, Any]) -> dict[str, Any]:
        name, arguments = params.get("name"), params.get("arguments") or {}
        if not isinstance(name, str) or not isinstance(arguments, dict):
            raise Refusal(INVALID_PARAMS, "tools/call takes a name and an arguments object")
        if name in self.registry and not self.selection.offers(self.registry.get(name)):
            text = f"FORBIDDEN: {name} is not offered by this server (see --caps/--tools)."
            return {"content": [wire.text_block(text)], "isError": True}
        meta = params.get("_meta")
        token = meta.get("progressToken") if isinstance(meta, dict) else None

        async def progress(done: float, total: float | None, message: str) -> None:
            if token is not None:
                notice = {"progressToken": token, "progress": done, "message": message}
                await self._send(
                    {
                        "jsonrpc": "2.0",
                        "method": "notifications/progress",
                        "params": notice if total is None else {**notice, "total": total},
                    }
                )

        response = await self.backend.call(name, dict(arguments), progress)
        return wire.result(response, self.shelf)

    def _read_resource(self, params: dict[str, Any]) -> dict[str, Any]:
        uri = str(params.get("uri"))
        found = self.shelf.contents(uri)
        if found is None:
            message = f"{uri} is no longer kept; run the tool again for a fresh copy."
            raise Refusal(INVALID_PARAMS, message)
        return {"contents": [found]}

    def _set_level(self, params: dict[str, Any]) -> dict[str, Any]:
        level = params.get("level")
        if level not in LEVELS:
            raise Refusal(INVALID_PARAMS, f"level must be one of {', '.join(LEVELS)}")
        self._level = level
        return {}

    # --- push events -------------------------------------------------------------------

    def _event(self, event: dict[str, Any]) -> None:
        """A browser event, as a log notice to the host (best effort, never blocks)."""
        notice = event_notice(event, self._level)
        if notice is None or not self._greeted:
            return
        level, data = notice
        params = {"level": level, "logger": "browser", "data": data}
        self._write({"jsonrpc": "2.0", "method": "notifications/message", "params": params})


def _is_id(value: object) -> TypeGuard[RequestId]:
    """A JSON-RPC request id: a string or an integer (a boolean is neither)."""
    return isinstance(value, str | int) and not isinstance(value, bool)
