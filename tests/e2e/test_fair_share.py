"""One controller doing its worst with slow servers, end to end: every other controller is
served as before (issue 33 §1).

A real relay, a real Chromium, the test Blossom server, two controllers on nostr-sdk, and a
loopback server that trickles one byte a second and counts what it receives.  The attacker
sends ``download --url`` there, one after another, more times than asyncio's default
executor has threads (each used to hold one for good); then its page asks the trickle for
more connections at once than ``[browser] egress_connections`` lets one controller have.
Meanwhile the other controller opens a page by this machine's name (a name lookup under the
network policy) and sends a file of its own (a fetch).
"""

from __future__ import annotations

import asyncio
import os
import socket
import urllib.parse
from dataclasses import dataclass, field

from tests.e2e.test_phone import put_file, send_file
from tests.fixtures.blossom import BlossomServer, blossom_server_fixture  # noqa: F401
from tests.fixtures.daemon import (
    SdkController,
    daemon_pubkey,
    start_daemon_fixture,  # noqa: F401
    wait_until,
)

# One more slow download than asyncio's default executor has threads.
SLOW_DOWNLOADS = min(32, (os.cpu_count() or 1) + 4) + 1
SHARE = 4  # [browser] egress_connections here
IMAGES = SHARE + 4  # a page's slow images, each from a host of its own


@dataclass
class Trickle:
    """An HTTP server on loopback that answers a large body one byte a second, forever."""

    requests: list[str] = field(default_factory=list)  # the path of every request received
    open: int = 0  # connections the client has not closed yet
    url: str = ""
    _server: asyncio.Server | None = None
    _writers: set[asyncio.StreamWriter] = field(default_factory=set)

    async def start(self) -> str:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.url = f"http://127.0.0.1:{self._server.sockets[0].getsockname()[1]}"
        return self.url

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.open += 1
        self._writers.add(writer)
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            self.requests.append(head.split(b" ")[1].decode())
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 1000000\r\n\r\n")
            while not await _closed(reader):
                writer.write(b".")
                await writer.drain()
        except (OSError, asyncio.IncompleteReadError):
            pass
        finally:
            self.open -= 1
            self._writers.discard(writer)
            writer.close()

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
        for writer in list(self._writers):
            writer.transport.abort()


async def _closed(reader: asyncio.StreamReader) -> bool:
    """Whether the client closed its side within a second (the pace of the trickle)."""
    try:
        return await asyncio.wait_for(reader.read(1), 1.0) == b""
    except TimeoutError:
        return False


async def test_one_controller_cannot_starve_the_others(
    nostr_relay_url, site_url, start_daemon, blossom_server: BlossomServer
):
    trickle = Trickle()
    await trickle.start()
    port = urllib.parse.urlsplit(trickle.url).port
    by_name = f"{socket.gethostname()}:{urllib.parse.urlsplit(site_url).port}"  # looked up
    images = [f"t{n}.localhost:{port}" for n in range(IMAGES + 1)]
    hosts = [
        by_name,
        *images,
        *(urllib.parse.urlsplit(u).netloc for u in (trickle.url, blossom_server.url)),
    ]
    try:
        async with (
            SdkController([nostr_relay_url]) as attacker,
            SdkController([nostr_relay_url]) as other,
        ):
            daemon = await start_daemon(
                [nostr_relay_url],
                controllers=[attacker.npub, other.npub],
                browser={
                    "block_private_networks": None,  # the default: on for DM controllers
                    "allowed_hosts": hosts,
                    "egress_connections": SHARE,
                    "command_timeout": 10,
                },
            )
            me = await daemon_pubkey(daemon)

            async def command(controller: SdkController, tool: str, **params: object) -> dict:
                return await controller.command(me, {"tool": tool, "params": params})

            # Slow downloads end at their deadline and really stop: the trickle sees each
            # connection closed.
            for n in range(SLOW_DOWNLOADS):
                stuck = await command(
                    attacker, "download", url=f"{trickle.url}/d{n}", timeout_ms=3000
                )
                assert stuck["error"]["code"] == "TIMEOUT", stuck
            await wait_until(lambda: trickle.open == 0)
            assert len(trickle.requests) == SLOW_DOWNLOADS

            # The other controller is served as before: a page by name, and its file.
            opened = await command(other, "open", url=f"http://{by_name}/form.html")
            assert opened["success"], opened
            photo = b"\x89PNG\r\n\x1a\n" + bytes(range(256))
            url, tags = await put_file(blossom_server, photo, "image/png")
            await send_file(other, me, url, [*tags, ["name", "photo.png"]])
            kept = await other.wait_reply(lambda r: r.sender == me)
            assert "received: photo.png" in kept.content, kept.content
            folder = daemon.config.browser.uploads_dir / other.pubkey
            assert (folder / "photo.png").read_bytes() == photo

            # The attacker's page asks for more slow connections at once than its share:
            # the trickle receives its share, and the attacker is told why no more came.
            assert (await command(attacker, "open", url=f"http://{by_name}/form.html"))["success"]
            tags_js = "".join(f'<img src="http://{h}/i">' for h in images[:IMAGES])
            await command(attacker, "eval", script=f"document.body.innerHTML += '{tags_js}'")
            await wait_until(lambda: len(trickle.requests) == SLOW_DOWNLOADS + SHARE)
            refused = await command(attacker, "open", url=f"http://{images[IMAGES]}/page")
            text = await command(attacker, "get_text")
            shown = f"{refused} {text}"
            assert f"You have {SHARE} connections through the egress proxy under way" in shown, (
                shown
            )
            assert len(trickle.requests) == SLOW_DOWNLOADS + SHARE, trickle.requests

            # Still the other controller is served.
            assert (await command(other, "get_title"))["success"]
            again = await command(other, "open", url=f"http://{by_name}/index.html")
            assert again["success"], again
    finally:
        await trickle.stop()
