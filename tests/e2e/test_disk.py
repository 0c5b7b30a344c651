"""End to end, the daemon's disk: what a page, a controller and the state store may put on it.

A real relay, the real daemon with its real Chromium, controllers on nostr-sdk, and a loopback
server that counts the bytes it serves.  Each test reads the disk itself: the bytes under
Playwright's artifacts folder (``$TMPDIR`` of the daemon's Playwright) and the downloads
folders, the files of a small filesystem, the modes of the state directory's files.
"""

from __future__ import annotations

import os
import stat
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from nostr_browserd.errors import BrowserdError
from tests.fixtures.daemon import (
    SdkController,
    daemon_pubkey,
    start_daemon_fixture,  # noqa: F401
    wait_until,
)

MiB = 1024 * 1024
PAGE = b"""<!doctype html><title>files</title>
<a id="attach" href="/file?size=%d">attachment</a>
<a id="small" href="/file?size=%d">small attachment</a>
<button id="script" onclick="const a = document.createElement('a');
  a.href = '/file?size=%d'; a.download = 'scripted.bin'; a.click()">scripted</button>
"""


class Served:
    """A loopback server of a page with links to attachments, counting what it serves."""

    def __init__(self, big: int, small: int) -> None:
        self.big, self.small = big, small
        self.bytes = 0
        self.ended = threading.Event()  # an attachment's response ended, whole or cut off
        served = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                if self.path.startswith("/file"):
                    served.attachment(self, int(self.path.split("=")[1]))
                    return
                body = PAGE % (served.big, served.small, served.big)
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def attachment(self, handler: BaseHTTPRequestHandler, size: int) -> None:
        """``size`` bytes as an attachment, with no length given (as a stream would be)."""
        handler.send_response(200)
        handler.send_header("Content-Type", "application/octet-stream")
        handler.send_header("Content-Disposition", 'attachment; filename="big.bin"')
        handler.send_header("Connection", "close")
        handler.end_headers()
        chunk = b"x" * 65536
        try:
            left = size
            while left > 0:
                handler.wfile.write(chunk[:left])
                self.bytes += min(left, len(chunk))
                left -= len(chunk)
        except OSError:
            pass  # the browser stopped it
        finally:
            self.ended.set()


@pytest.fixture(name="served")
def served_fixture() -> Iterator[Served]:
    served = Served(big=32 * MiB, small=1000)
    try:
        yield served
    finally:
        served.server.shutdown()


def bytes_under(*folders: Path) -> int:
    """Every regular file's bytes under ``folders``."""
    return sum(p.stat().st_size for f in folders for p in f.rglob("*") if p.is_file())


def artifacts(tmp: Path) -> list[Path]:
    """Playwright's artifacts folders (where Chromium writes downloads) under its $TMPDIR."""
    return list(tmp.glob("playwright-artifacts-*"))


async def run(controller: SdkController, daemon: str, tool: str, **params: Any) -> dict:
    return await controller.command(daemon, {"tool": tool, "params": params})


async def test_a_download_nobody_asked_for_leaves_nothing_on_the_disk(
    nostr_relay_url, start_daemon, served, tmp_path, monkeypatch
):
    """§2: a page's own downloads (an attachment link, a scripted a.download) are stopped
    and deleted, big or small; the one ``download`` asks for is kept, within the cap."""
    tmp = tmp_path / "tmp"  # Playwright keeps its downloads under its $TMPDIR
    tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp))
    cap = MiB
    async with SdkController([nostr_relay_url]) as alice:
        daemon = await start_daemon(
            [nostr_relay_url], controllers=[alice.npub], browser={"download_cap": cap}
        )
        me = await daemon_pubkey(daemon)
        downloads = daemon.config.browser.downloads_dir
        [chromium] = artifacts(tmp)
        assert (await run(alice, me, "open", url=served.url))["success"]

        for button in ("#attach", "#script"):
            served.ended.clear()
            assert (await run(alice, me, "click", selector=button))["success"]
            await wait_until(served.ended.is_set)
            await wait_until(lambda: bytes_under(chromium, downloads) == 0)

        # A small one nobody asked for is deleted too (docs/security.md says so).
        served.ended.clear()
        assert (await run(alice, me, "click", selector="#small"))["success"]
        await wait_until(served.ended.is_set)
        assert (await run(alice, me, "get_url"))["success"]
        await wait_until(lambda: bytes_under(chromium, downloads) == 0)

        # The one a command asks for is kept, once, in the downloads folder.
        kept = await run(alice, me, "download", selector="#small", content=False)
        assert kept["success"] and kept["data"]["size"] == served.small, kept
        await wait_until(lambda: bytes_under(chromium) == 0)
        assert bytes_under(downloads) == served.small


async def test_the_state_directory_is_its_owners_alone(nostr_relay_url, start_daemon, tmp_path):
    """§8: under a umask of 022 every file the daemon makes in its state directory is 0600
    (the store's -wal and -shm too) and every folder 0700; a state directory the group or
    others may read is refused at start, saying how to fix it."""
    state = tmp_path / "state"
    umask = os.umask(0o022)
    try:
        async with SdkController([nostr_relay_url]) as alice:
            daemon = await start_daemon([nostr_relay_url], controllers=[alice.npub])
            me = await daemon_pubkey(daemon)
            assert (await run(alice, me, "get_url"))["success"]  # the store is written
            made = [state, *state.rglob("*")]
            assert {"state.sqlite3", "state.sqlite3-wal", "state.sqlite3-shm"} <= {
                p.name for p in made
            }
            modes = {p.name: stat.S_IMODE(p.lstat().st_mode) for p in made}
            assert all(mode & 0o077 == 0 for mode in modes.values()), modes
            await daemon.stop()

        state.chmod(0o755)
        with pytest.raises(BrowserdError) as refused:
            await start_daemon([nostr_relay_url], state_dir=state)
        assert f"permissions 0755 for the state directory {state} are too open" in str(
            refused.value
        )
        assert f"Fix: chmod 700 {state}" in str(refused.value)
    finally:
        os.umask(umask)
