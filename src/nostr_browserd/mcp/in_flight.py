"""The stdio session's streams, kept open at the input's end until every request read is answered.

``nostr-browserd mcp < requests.jsonl``: the input ends right after its last line, while the
calls it asked for still run.  The SDK's serve loop ends with its read stream and cancels the
handlers still running (they answer -32000 "Connection closed"), so here the read stream
reports its end only once every request it handed over has had its answer written (or was
cancelled by the client, which then expects none).  Each call is bounded by its own timeout.

A line that is not a JSON-RPC message gets its JSON-RPC error (parse error, invalid request)
instead of the SDK's silence: a batch cut off mid-line says so.
"""

from __future__ import annotations

import collections
from types import TracebackType
from typing import Any, Generic, Self, TypeVar

import anyio
from mcp.shared._stream_protocols import ReadStream, WriteStream
from mcp.shared.dispatcher import coerce_request_id
from mcp.shared.jsonrpc_dispatcher import cancelled_request_id_from_params
from mcp.shared.message import SessionMessage
from mcp_types import (
    INVALID_REQUEST,
    PARSE_ERROR,
    ErrorData,
    JSONRPCError,
    JSONRPCNotification,
    JSONRPCRequest,
    JSONRPCResponse,
    RequestId,
)
from pydantic import ValidationError

Item = SessionMessage | Exception
CANCELLED = "notifications/cancelled"
Inner = TypeVar("Inner", ReadStream[Item], WriteStream[SessionMessage])


def _rejection(exc: Exception) -> ErrorData | None:
    """The JSON-RPC error for a line the transport could not read; none for a blank line."""
    first = exc.errors()[0] if isinstance(exc, ValidationError) and exc.errors() else None
    if first is None:
        return ErrorData(code=PARSE_ERROR, message=f"Parse error: {exc}")
    if first["type"] != "json_invalid":  # JSON, but not a request, notification or answer
        return ErrorData(code=INVALID_REQUEST, message="Invalid Request: not a JSON-RPC message")
    if not str(first.get("input", "")).strip():
        return None  # a blank line (a file's last one, say) asks nothing
    return ErrorData(code=PARSE_ERROR, message=f"Parse error: {first['msg']}")


class _Ledger:
    """The requests read and not yet answered (ids as the SDK's dispatcher correlates them)."""

    def __init__(self) -> None:
        self.open: collections.Counter[RequestId] = collections.Counter()
        self._emptied: anyio.Event | None = None

    def asked(self, request_id: RequestId) -> None:
        self.open[coerce_request_id(request_id)] += 1

    def settled(self, request_id: RequestId | None) -> None:
        """Answered, or cancelled by the client; an id not open (a late cancel) changes nothing."""
        if request_id is None or (key := coerce_request_id(request_id)) not in self.open:
            return
        self.open[key] -= 1
        if not self.open[key]:
            del self.open[key]
        if not self.open and self._emptied is not None:
            self._emptied.set()

    async def all_settled(self) -> None:
        if self.open:
            self._emptied = anyio.Event()
            await self._emptied.wait()


class _Closing(Generic[Inner]):
    """A stream in front of ``inner``: closing it (``async with`` too) closes ``inner``."""

    inner: Inner

    async def aclose(self) -> None:
        await self.inner.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()


class _Answering(_Closing[WriteStream[SessionMessage]]):
    """The write stream, settling each request as its answer goes out."""

    def __init__(self, inner: WriteStream[SessionMessage], ledger: _Ledger) -> None:
        self.inner, self.ledger = inner, ledger

    async def send(self, item: SessionMessage, /) -> None:
        await self.inner.send(item)
        if isinstance(item.message, JSONRPCResponse | JSONRPCError):
            self.ledger.settled(item.message.id)


class _Patient(_Closing[ReadStream[Item]]):
    """The read stream, whose end waits for the answers to the requests it handed over."""

    def __init__(
        self, inner: ReadStream[Item], errors: WriteStream[SessionMessage], ledger: _Ledger
    ) -> None:
        self.inner, self.errors, self.ledger = inner, errors, ledger

    @property
    def last_context(self) -> Any:
        """The sender's context, which the SDK's dispatcher runs each handler in."""
        return getattr(self.inner, "last_context", None)

    async def receive(self) -> Item:
        while True:
            try:
                item = await self.inner.receive()
            except anyio.EndOfStream:
                await self.ledger.all_settled()
                raise
            if isinstance(item, SessionMessage):
                self._note(item)
                return item
            if (error := _rejection(item)) is not None:
                await self.errors.send(
                    SessionMessage(JSONRPCError(jsonrpc="2.0", id=None, error=error))
                )

    def _note(self, item: SessionMessage) -> None:
        message = item.message
        if isinstance(message, JSONRPCRequest):
            self.ledger.asked(message.id)
        elif isinstance(message, JSONRPCNotification) and message.method == CANCELLED:
            self.ledger.settled(cancelled_request_id_from_params(message.params))

    def __aiter__(self) -> _Patient:
        return self

    async def __anext__(self) -> Item:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None


def answered_before_the_end(
    read: ReadStream[Item], write: WriteStream[SessionMessage]
) -> tuple[ReadStream[Item], WriteStream[SessionMessage]]:
    """``read`` and ``write``, with the read side's end held back until all is answered."""
    ledger = _Ledger()
    return _Patient(read, write, ledger), _Answering(write, ledger)
