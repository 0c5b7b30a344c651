"""End to end, the daemon's disk: what a page, a controller and the state store may put on it.

A real relay, the real daemon with its real Chromium, controllers on nostr-sdk, and a loopback
server that counts the bytes it serves.  Each test reads the disk itself: the bytes under
Playwright's artifacts folder (``$TMPDIR`` of the daemon's Playwright) and the downloads
folders, the files of a small filesystem, the modes of the state directory's files.
"""

from __future__ import annotations

import asyncio
import os
import stat
import subprocess
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from nostr_browserd.errors import BrowserdError
from tests.e2e.test_phone import put_file, send_file
from tests.fixtures.blossom import BlossomServer, blossom_server_fixture  # noqa: F401
from tests.fixtures.daemon import (
    Reply,
    SdkController,
    daemon_pubkey,
    start_daemon_fixture,  # noqa: F401
    wait_until,
)

MiB = 1024 * 1024
PAGE = b"""<!doctype html><title>files</title>
<a id="attach" href="/file?size=%d">attachment</a>
<a id="small" href="/file?size=%d">small attachment</a>
<a id="bounce" href="/bounce">redirected to the attachment</a>
<button id="script" onclick="const a = document.createElement('a');
  a.href = '/file?size=%d'; a.download = 'scripted.bin'; a.click()">scripted</button>
"""


class Served:
    """A loopback server of a page with links to attachments, counting what it serves."""

    def __init__(self, big: int, small: int) -> None:
        self.big, self.small = big, small
        self.bytes = 0
        self.chunk = os.urandom(65536)  # no test's secret can be in it (the suite's leak scan)
        self.ended = threading.Event()  # an attachment's response ended, whole or cut off
        self.hold, self.sent, self.go = False, threading.Event(), threading.Event()
        served = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                if self.path.startswith("/file"):
                    served.attachment(self, int(self.path.split("=")[1]))
                    return
                if self.path == "/bounce":
                    self.send_response(302)
                    self.send_header("Location", f"/file?size={served.big}")
                    self.send_header("Content-Length", "0")
                    self.end_headers()
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
        """``size`` bytes as an attachment, with no length given (as a stream would be).

        With ``hold`` set a response waits after its first chunk (``sent`` says it got
        there) for ``go``: a test changes the disk under a running download meanwhile.
        """
        handler.send_response(200)
        handler.send_header("Content-Type", "application/octet-stream")
        handler.send_header("Content-Disposition", 'attachment; filename="big.bin"')
        handler.send_header("Connection", "close")
        handler.end_headers()
        chunk = self.chunk
        try:
            left = size
            while left > 0:
                handler.wfile.write(chunk[:left])
                self.bytes += min(left, len(chunk))
                left -= len(chunk)
                if self.hold:
                    handler.wfile.flush()
                    self.sent.set()
                    self.go.wait(30)
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
    """§2: a page's own downloads (an attachment link, a scripted a.download, a redirect to
    an attachment) are stopped and deleted, big or small; the one ``download`` asks for is
    kept, once, within the cap."""
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
        events: list[dict] = []
        assert daemon.browser is not None
        daemon.browser.on_event(events.append)
        assert (await run(alice, me, "open", url=served.url))["success"]

        for button in ("#attach", "#script", "#bounce"):
            served.ended.clear()
            assert (await run(alice, me, "click", selector=button))["success"]
            await wait_until(served.ended.is_set)
            await wait_until(lambda: bytes_under(chromium, downloads) == 0)

        # An address that is an attachment, opened: the same.
        served.ended.clear()
        address = served.url + f"file?size={served.big}"
        opened = await run(alice, me, "open", url=address)
        assert opened["error"] == {
            "code": "NAVIGATION_FAILED",
            "message": f"{address} is a download, not a page: nothing was kept. download --url "
            "saves it.",
        }
        await wait_until(served.ended.is_set)
        await wait_until(lambda: bytes_under(chromium, downloads) == 0)
        assert (await run(alice, me, "open", url=served.url))["success"]

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
        said = [e["data"]["kept"] for e in events if e["event"] == "download"]
        assert said == [False, False, False, False, False, True], "each one says whether it is kept"


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


@pytest.fixture(name="small_disk")
def small_disk_fixture(tmp_path: Path) -> Iterator[Path]:
    """A filesystem of 8 MB of its own (tmpfs), unmounted at the end, pass or fail (ask for
    it before ``start_daemon``: the daemon must stop before it is unmounted)."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small filesystem needs root")
    disk = tmp_path / "small"
    disk.mkdir(mode=0o700)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m,mode=0700", "tmpfs", disk], check=True)
    try:
        yield disk
    finally:
        subprocess.run(["umount", disk], check=True)


def fill(disk: Path, leave: int) -> Path:
    """A file that takes all but about ``leave`` bytes of ``disk``'s free room."""
    filler = disk / "filler"
    with filler.open("ab") as out:
        while os.statvfs(disk).f_bavail * os.statvfs(disk).f_frsize > leave:
            room = os.statvfs(disk).f_bavail * os.statvfs(disk).f_frsize - leave
            try:
                out.write(os.urandom(min(room, MiB) or 1))
                out.flush()
            except OSError:  # full to the brim
                break
    return filler


async def send(
    controller: SdkController, daemon: str, blossom: BlossomServer, data: bytes
) -> Reply:
    """Send ``data`` as a file from the chat; the daemon's reply to it."""
    url, tags = await put_file(blossom, data, "application/octet-stream")
    await send_file(controller, daemon, url, [*tags, ["name", "f.bin"]])
    return await controller.wait_reply(lambda r: r.sender == daemon)


async def test_one_controllers_files_cannot_fill_the_disk(
    small_disk, nostr_relay_url, start_daemon, blossom_server, served
):
    """§4 on an 8 MB filesystem holding the state directory: a controller that fills its
    quota is told so (and ``status`` shows its use) while another is served; files are
    refused before the store runs out of room; a download the disk runs out under leaves
    nothing behind, and the store still works."""
    state = small_disk / "state"
    size = 1200 * 1024
    async with (
        SdkController([nostr_relay_url]) as alice,
        SdkController([nostr_relay_url]) as bob,
    ):
        daemon = await start_daemon(
            [nostr_relay_url],
            controllers=[alice.npub, bob.npub],
            state_dir=state,
            files={"quota_mb": 2, "free_mb": 1, "max_mb": 2},
        )
        me = await daemon_pubkey(daemon)
        uploads = daemon.config.browser.uploads_dir
        assert (
            "received: f.bin" in (await send(alice, me, blossom_server, os.urandom(size))).content
        )
        over = await send(alice, me, blossom_server, os.urandom(size))
        assert "TOO_LARGE" in over.content and "Over your file quota" in over.content, over.content
        assert "take 1.2 MB of 2.0 MB ([files] quota_mb; uploads 1.2 MB" in over.content
        assert bytes_under(uploads / alice.pubkey) == size, "nothing of the second is kept"
        [entry] = [c for c in (await daemon.status())["controllers"] if c["npub"] == alice.npub]
        assert entry["files"] == {
            "uploads": size,
            "downloads": 0,
            "recordings": 0,
            "total": size,
            "quota": 2 * MiB,
        }

        # Everyone else is served as before.
        assert "received: f.bin" in (await send(bob, me, blossom_server, os.urandom(size))).content
        assert (await run(bob, me, "open", url=served.url))["success"]

        # Another program fills the disk: files are refused while 1 MB is left for the store.
        filler = fill(small_disk, leave=int(1.5 * MiB))
        full = await send(bob, me, blossom_server, os.urandom(size // 2))  # within his quota
        assert "UNAVAILABLE" in full.content and "keeps 1.0 MB free for its state store" in (
            full.content
        ), full.content
        assert bytes_under(uploads / bob.pubkey) == size
        assert (await run(bob, me, "get_url"))["success"], "the store is written still"
        filler.unlink()

        # The disk runs out under a download: nothing of it is left, and it says why.
        served.hold = True
        download = asyncio.ensure_future(
            run(alice, me, "download", url=served.url + "file?size=600000", content=False)
        )
        await asyncio.to_thread(served.sent.wait, 30)
        async with asyncio.timeout(30):  # its first chunk is on the disk
            while bytes_under(daemon.config.browser.downloads_dir) == 0:
                await asyncio.sleep(0.01)
        filler = fill(small_disk, leave=0)
        served.go.set()
        failed = await download
        assert failed["error"]["code"] == "UNAVAILABLE", failed
        assert "ran out of room while writing" in failed["error"]["message"]
        assert bytes_under(daemon.config.browser.downloads_dir) == 0
        filler.unlink()
        assert (await run(alice, me, "get_url"))["success"]

        # A week later ([files] received_keep) what was sent is gone, and room is made.
        expired = daemon.browser.quota.expire(time.time() + 7 * 86400)
        assert sorted(p.parent.name for p in expired) == sorted([alice.pubkey, bob.pubkey])
        assert bytes_under(uploads) == 0
        assert (
            "received: f.bin" in (await send(alice, me, blossom_server, os.urandom(size))).content
        )


async def test_downloads_and_recordings_count_against_the_quota(
    nostr_relay_url, start_daemon, served
):
    """§4: a download stops where its owner's room ends, and a recording that does not fit is
    only returned, never kept, each saying why; another controller is served meanwhile."""
    async with (
        SdkController([nostr_relay_url]) as alice,
        SdkController([nostr_relay_url]) as bob,
    ):
        daemon = await start_daemon(
            [nostr_relay_url], controllers=[alice.npub, bob.npub], files={"quota_mb": 0.5}
        )
        me = await daemon_pubkey(daemon)
        browser = daemon.config.browser
        assert (await run(alice, me, "open", url=served.url))["success"]
        assert (await run(alice, me, "har_start"))["success"]

        over = await run(alice, me, "download", url=served.url + "file?size=600000")
        assert over["error"]["code"] == "TOO_LARGE", over
        assert "Over your file quota" in over["error"]["message"]
        assert bytes_under(browser.downloads_dir) == 0, "nothing of it is kept"
        kept = await run(alice, me, "download", url=served.url + "file?size=400000", content=False)
        assert kept["success"] and kept["data"]["size"] == 400000

        daemon.browser.quota.limit = 400000  # the HAR no longer fits beside the download
        har = (await run(alice, me, "har_stop", name="visit"))["data"]
        assert har["stored"] is False and har["base64"], har
        assert har["note"].startswith("Not kept on the daemon: Over your file quota")
        assert bytes_under(browser.state_dir) == 0

        assert (await run(bob, me, "open", url=served.url))["success"]
        assert (await run(bob, me, "download", selector="#small"))["success"]
