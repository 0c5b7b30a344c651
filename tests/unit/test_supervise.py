"""Supervised readers: restarted whenever they end, given up on (and reported) when they
keep ending; the watchdog stops pinging systemd while one is given up on."""

from __future__ import annotations

import asyncio
import contextlib
import socket

from nostr_browserd.daemon.notify import watchdog
from nostr_browserd.supervise import stopped_readers, supervise


async def test_a_reader_that_fails_or_returns_is_restarted() -> None:
    runs: list[int] = []
    third = asyncio.Event()

    async def reader() -> None:
        runs.append(len(runs))
        if len(runs) == 1:
            raise RecursionError("what one bad message did to the NIP-46 reader")
        if len(runs) == 2:
            return  # its iterator ended: just as dead
        third.set()
        await asyncio.Event().wait()

    task = supervise("test reader", reader, pause=0)
    await asyncio.wait_for(third.wait(), 10)
    assert stopped_readers() is None
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    assert runs == [0, 1, 2]


async def test_a_reader_that_keeps_failing_is_given_up_and_reported() -> None:
    calls = 0

    async def broken() -> None:
        nonlocal calls
        calls += 1
        raise ValueError("broken for good")

    task = supervise("broken reader", broken, limit=3, window=3600, pause=0)
    while stopped_readers() is None:
        assert not task.done()
        await asyncio.sleep(0.01)
    assert stopped_readers() == "broken reader" and calls == 4
    task.cancel()  # a new login replaces it: the report goes with it
    await asyncio.gather(task, return_exceptions=True)
    assert stopped_readers() is None


async def test_a_reader_whose_source_was_closed_on_purpose_ends_quietly() -> None:
    closed = True

    async def reader() -> None:
        return

    task = supervise("closing reader", reader, finished=lambda: closed)
    await asyncio.wait_for(task, 10)
    assert stopped_readers() is None


async def test_the_watchdog_stops_pinging_while_a_reader_is_given_up(tmp_path, monkeypatch):
    path = str(tmp_path / "notify.sock")
    monkeypatch.setenv("NOTIFY_SOCKET", path)
    problem: list[str | None] = [None]
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as systemd:
        systemd.bind(path)
        systemd.setblocking(False)
        loop = asyncio.get_running_loop()
        pings = asyncio.create_task(watchdog(0.01, lambda: problem[0]))
        try:
            assert await asyncio.wait_for(loop.sock_recv(systemd, 200), 10) == b"WATCHDOG=1"
            problem[0] = "inbox"
            with contextlib.suppress(BlockingIOError):  # pings sent before, still queued
                while True:
                    systemd.recv(200)
            for _ in range(3):
                got = await asyncio.wait_for(loop.sock_recv(systemd, 200), 10)
                assert got == b"STATUS=not healthy: inbox"
        finally:
            pings.cancel()
