"""This process's stdin and stdout as the event loop's own pipes: the wire of an MCP stdio
session, for the SDK's server (:mod:`.stdio`) and ``mcp --local``'s own (:mod:`.plain`).

When stdin and stdout are pipes or sockets (how every host starts us) the loop reads and
writes the descriptors directly, with no worker thread in between.  As in the SDK, fd 0 and
fd 1 are moved aside while we serve: the wire is read and written through private
duplicates, a child that reads stdin gets EOF and stray output (a library's print, a
browser's log) lands on stderr, never in the middle of a message.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import stat
from collections.abc import AsyncIterator, Iterator

LINE_LIMIT = 2**28
"""Bytes of one incoming message line (asyncio's default, 64 KiB, is less than a fill)."""
CLOSE_TIMEOUT = 5.0  # seconds the last messages may take to reach a host that stopped reading


def is_stream(fd: int) -> bool:
    """A pipe or a socket: what the loop can watch without changing a terminal's mode."""
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


def piped() -> bool:
    """stdin and stdout are both pipes or sockets (anything else: a terminal, a file)."""
    return is_stream(0) and is_stream(1)


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


class _Written(asyncio.streams.FlowControlMixin):
    """The write pipe's protocol: flow control for ``drain``, and when it has closed."""

    def __init__(self) -> None:
        super().__init__()
        self.closed: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def connection_lost(self, exc: Exception | None) -> None:
        super().connection_lost(exc)
        if not self.closed.done():
            self.closed.set_result(None)


@contextlib.asynccontextmanager
async def pipes() -> AsyncIterator[tuple[asyncio.StreamReader, asyncio.StreamWriter]]:
    """The wire's reader and writer (stdin and stdout must be :func:`piped`); at the end,
    what is still buffered is written (for at most ``CLOSE_TIMEOUT``)."""
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
            try:
                yield reader, asyncio.StreamWriter(writing, protocol, None, loop)
            finally:
                reading.close()
                writing.close()  # once what is still buffered has been written
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(asyncio.shield(protocol.closed), CLOSE_TIMEOUT)
    finally:
        os.close(null)
