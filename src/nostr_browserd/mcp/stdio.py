"""The SDK's MCP server over this process's stdin and stdout, read and written by the event
loop itself (:mod:`.pipes`).

The SDK's ``stdio_server`` reads each line and writes each message through anyio's worker
threads: three thread handoffs per call (a read, a write, a flush), each a wake-up the
scheduler may be slow to give on a loaded machine, paid by every call of ``mcp --to``.
When stdin and stdout are pipes or sockets (how every host starts us) the loop reads and
writes the descriptors directly; anything else (a terminal, a file) keeps the SDK's way.

Either way the input's end closes the session only once every request read has been
answered (:mod:`.in_flight`): ``mcp < requests.jsonl`` loses no answer.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

from mcp.server.stdio import stdio_server

from .in_flight import answered_before_the_end
from .pipes import piped, pipes


class _Lines:
    """The incoming lines, as ``stdio_server`` iterates an ``AsyncFile``."""

    def __init__(self, reader: asyncio.StreamReader) -> None:
        self.reader = reader

    def __aiter__(self) -> _Lines:
        return self

    async def __anext__(self) -> str:
        line = await self.reader.readline()
        if not line:
            raise StopAsyncIteration
        return line.decode("utf-8", errors="replace")


class _Out:
    """The outgoing messages, as ``stdio_server`` writes an ``AsyncFile``."""

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self.writer = writer

    async def write(self, text: str) -> None:
        self.writer.write(text.encode("utf-8"))

    async def flush(self) -> None:
        await self.writer.drain()


@contextlib.asynccontextmanager
async def stdio_streams() -> AsyncIterator[tuple[Any, Any]]:
    """``stdio_server``'s read and write streams, on the loop's pipes where it can."""
    if not piped():
        async with stdio_server() as streams:
            yield answered_before_the_end(*streams)
        return
    async with pipes() as (reader, writer):
        lines: Any = _Lines(reader)  # stdio_server's AsyncFile, as far as it reads one
        out: Any = _Out(writer)  # … and writes one
        async with stdio_server(lines, out) as streams:
            yield answered_before_the_end(*streams)
