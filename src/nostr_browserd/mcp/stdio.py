"""MCP over this process's stdin and stdout, read and written by the event loop itself.

The SDK's ``stdio_server`` reads each line and writes each message through anyio's worker
threads: three thread handoffs per call (a read, a write, a flush), each a wake-up the
scheduler may be slow to give on a loaded machine, paid by every call of ``mcp --local``
and ``mcp --to``.  When stdin and stdout are pipes or sockets (how every host starts us)
the loop reads and writes the descriptors directly; anything else (a terminal, a file)
keeps the SDK's way.

As in the SDK, fd 0 and fd 1 are moved aside while we serve: the wire is read and written
through private duplicates, a child that reads stdin gets EOF and stray output (a
library's print, a browser's log) lands on stderr, never in the middle of a message.

Either way the input's end closes the session only once every request read has been
answered (:mod:`.in_flight`): ``mcp < requests.jsonl`` loses no answer.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import stat
from collections.abc import AsyncIterator, Iterator
from typing import Any

from mcp.server.stdio import stdio_server

from .in_flight import answered_before_the_end

LINE_LIMIT = 2**28
"""Bytes of one incoming message line (asyncio's default, 64 KiB, is less than a fill)."""
CLOSE_TIMEOUT = 5.0  # seconds the last messages may take to reach a host that stopped reading


def _is_stream(fd: int) -> bool:
    """A pipe or a socket: what the loop can watch without changing a terminal's mode."""
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


@contextlib.contextmanager
def _moved_aside(fd: int, stand_in: int) -> Iterator[int]:
    """A private duplicate of ``fd`` (the wire), with ``stand_in`` on ``fd`` meanwhile."""
    wire = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)
    os.dup2(stand_in, fd)
    try:
        yield wire
    finally:
        with contextlib.suppress(OSError):
            os.set_blocking(wire, True)  # the loop made it non-blocking
            os.dup2(wire, fd)
        os.close(wire)


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


class _Written(asyncio.streams.FlowControlMixin):
    """The write pipe's protocol: flow control for ``drain``, and when it has closed."""

    def __init__(self) -> None:
        super().__init__()
        self.closed: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def connection_lost(self, exc: Exception | None) -> None:
        super().connection_lost(exc)
        if not self.closed.done():
            self.closed.set_result(None)


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
    if not (_is_stream(0) and _is_stream(1)):
        async with stdio_server() as streams:
            yield answered_before_the_end(*streams)
        return
    loop = asyncio.get_running_loop()
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        with _moved_aside(0, null) as wire_in, _moved_aside(1, 2) as wire_out:
            reader = asyncio.StreamReader(limit=LINE_LIMIT)
            source = os.fdopen(wire_in, "rb", buffering=0, closefd=False)
            sink = os.fdopen(wire_out, "wb", buffering=0, closefd=False)
            reading, _ = await loop.connect_read_pipe(
                lambda: asyncio.StreamReaderProtocol(reader), source
            )
            writing, protocol = await loop.connect_write_pipe(_Written, sink)
            writer = asyncio.StreamWriter(writing, protocol, None, loop)
            lines: Any = _Lines(reader)  # stdio_server's AsyncFile, as far as it reads one
            out: Any = _Out(writer)  # … and writes one
            try:
                async with stdio_server(lines, out) as streams:
                    yield answered_before_the_end(*streams)
            finally:
                reading.close()
                writing.close()  # once what is still buffered has been written
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(asyncio.shield(protocol.closed), CLOSE_TIMEOUT)
    finally:
        os.close(null)
