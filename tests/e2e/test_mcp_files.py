"""``mcp --to``'s large files, end to end: a real daemon on a real relay with a real Chromium,
the real CLI as the host's MCP server (mcp SDK client), and the test Blossom server.

A file reaches the host as it would from ``mcp --local``: a picture as ``image`` content, a
PDF as an embedded resource, or over the embed limit as a resource link the host reads from
``mcp --to``'s own shelf.  With ``[files] blossom_servers`` on the daemon, files of at least
``files.link.LINK_AT_LEAST`` bytes come by a sealed Blossom link instead of in parts.
"""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import logging
import os
import socket
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import mcp.types as types
import pytest
from mcp import ClientSession

from nostr_browserd.errors import BrowserdError
from nostr_browserd.files.link import LINK_AT_LEAST, fetch_file, link_of
from nostr_browserd.files.sealed import seal
from tests.fixtures.blossom import Blob, BlossomServer, blossom_server_fixture  # noqa: F401
from tests.fixtures.daemon import (
    SdkController,
    daemon_pubkey,
    start_daemon_fixture,  # noqa: F401
)
from tests.fixtures.mcp_client import connect
from tests.fixtures.relays import free_port
from tests.fixtures.site import serve_directory

# Random pixels do not compress: a PDF of this page is about 1 MB, over the embed limit once
# in base64 (mcpshape.content.EMBED_LIMIT), and its screenshot about 1 MB of PNG.
SIDE = 580
NOISE = f"""<!doctype html><html><body style="margin:0">
<div id="small" style="width:40px;height:20px;background:#c33"></div>
<canvas id="noise" width="{SIDE}" height="{SIDE}"></canvas>
<script>
const c = document.getElementById('noise').getContext('2d');
const img = c.createImageData({SIDE}, {SIDE});
for (let i = 0; i < img.data.length; i += 65536) {{
  crypto.getRandomValues(img.data.subarray(i, i + 65536));
}}
for (let i = 3; i < img.data.length; i += 4) img.data[i] = 255;
c.putImageData(img, 0, 0);
</script></body></html>"""


async def file_of(session: ClientSession, result: types.CallToolResult) -> bytes:
    """The file in a result as the host reads it: embedded, or through its resource link."""
    assert not result.is_error, result.content
    first = result.content[0]
    if first.type == "resource_link":
        read = await session.read_resource(first.uri)
        return base64.b64decode(read.contents[0].blob)
    assert first.type == "resource", first
    return base64.b64decode(first.resource.blob)


async def noise_page(tmp_path: Path) -> tuple[str, Any]:
    (tmp_path / "noise.html").write_text(NOISE)
    server = serve_directory(tmp_path)
    return f"http://127.0.0.1:{server.server_port}/noise.html", server


def image_of(result: types.CallToolResult) -> bytes:
    assert not result.is_error, result.content
    assert result.content[0].type == "image", result.content[0]
    return base64.b64decode(result.content[0].data)


@contextlib.asynccontextmanager
async def host(
    relay: str, start_daemon: Any, tmp_path: Path, transport: str, *servers: str
) -> AsyncIterator[tuple[ClientSession, Any]]:
    """A daemon putting files on ``servers``, the noise page open in it through ``mcp --to``
    (``transport``): the host's session, and the daemon."""
    url, site = await noise_page(tmp_path)
    agent = SdkController([relay])
    key = agent.write_key(tmp_path / "agent.nsec")
    files = {"blossom_servers": list(servers)}
    daemon = await start_daemon([relay], controllers=[agent.npub], files=files)
    args = ("--to", daemon.npub, "--key", str(key), "--relay", relay, "--transport", transport)
    try:
        async with connect(*args) as session:
            assert not (await session.call_tool("open", {"url": url})).is_error
            yield session, daemon
    finally:
        site.shutdown()
        site.server_close()


@pytest.mark.parametrize("transport", ["contextvm", "dm"])
async def test_large_files_come_by_link_intact_and_small_ones_in_parts(
    nostr_relay_url, start_daemon, tmp_path: Path, blossom_server: BlossomServer, transport
):
    """The blobs the daemon put on Blossom are what mcp --to fetched (each once, then gone
    from the reply), and the host gets the same content as without them."""
    async with host(nostr_relay_url, start_daemon, tmp_path, transport, blossom_server.url) as (
        session,
        _,
    ):
        pdf_result = await session.call_tool("pdf", {})
        pdf = await file_of(session, pdf_result)
        png = image_of(await session.call_tool("screenshot", {"selector": "#noise"}))
        small = image_of(await session.call_tool("screenshot", {"selector": "#small"}))
    assert pdf.startswith(b"%PDF-") and len(pdf) > 750_000, len(pdf)
    assert png.startswith(b"\x89PNG") and len(png) > LINK_AT_LEAST
    assert small.startswith(b"\x89PNG") and len(small) < LINK_AT_LEAST
    sizes = sorted(len(blob.data) for blob in blossom_server.blobs.values())
    assert sizes == sorted([len(pdf) + 16, len(png) + 16]), "the two large files, sealed"
    assert sorted(blossom_server.fetched) == sorted(f"/{x}" for x in blossom_server.blobs)
    assert pdf_result.content[0].type == "resource_link", "over the limit: on mcp --to's shelf"


async def test_a_pdf_over_the_embed_limit_reaches_the_host_over_contextvm(
    nostr_relay_url, start_daemon, tmp_path: Path
):
    """The daemon has no Blossom server: the PDF comes in CEP-22 parts, and the host reads
    it from ``mcp --to``'s own shelf (never a link to the daemon's, which it cannot read)."""
    url, site = await noise_page(tmp_path)
    agent = SdkController([nostr_relay_url])
    key = agent.write_key(tmp_path / "agent.nsec")
    daemon = await start_daemon([nostr_relay_url], controllers=[agent.npub])
    args = ("--to", daemon.npub, "--key", str(key), "--relay", nostr_relay_url)
    try:
        async with connect(*args, "--transport", "contextvm") as session:
            assert not (await session.call_tool("open", {"url": url})).is_error
            result = await session.call_tool("pdf", {})
            pdf = await file_of(session, result)
    finally:
        site.shutdown()
        site.server_close()
    assert result.content[0].type == "resource_link", "over the limit, as mcp --local links it"
    assert pdf.startswith(b"%PDF-") and len(pdf) > 750_000, len(pdf)


async def test_a_plain_json_request_keeps_its_base64(
    nostr_relay_url, start_daemon, tmp_path: Path, blossom_server: BlossomServer
):
    """Only a request that asks (mcp --to's) gets a link: a script's JSON gets its base64."""
    url, site = await noise_page(tmp_path)
    try:
        async with SdkController([nostr_relay_url]) as script:
            files = {"blossom_servers": [blossom_server.url]}
            daemon = await start_daemon([nostr_relay_url], controllers=[script.npub], files=files)
            me = await daemon_pubkey(daemon)
            assert (await script.command(me, {"tool": "open", "params": {"url": url}}))["success"]
            asked = {"tool": "screenshot", "params": {"selector": "#noise"}}
            shot = await script.command_parts(me, asked, timeout=60)
    finally:
        site.shutdown()
        site.server_close()
    data = shot.response["data"]
    assert "link" not in data and len(base64.b64decode(data["base64"])) > LINK_AT_LEAST
    assert blossom_server.blobs == {} and blossom_server.auths == []


async def test_a_blossom_server_down_or_refusing_falls_back_to_parts(
    nostr_relay_url, start_daemon, tmp_path: Path, blossom_server: BlossomServer, caplog
):
    """The host still gets its file, in parts; the daemon's log says why, the result not."""
    down = f"http://127.0.0.1:{free_port()}"
    blossom_server.refusing = (507, "storage full")
    caplog.set_level(logging.WARNING, logger="nostr_browserd.files.outgoing")
    async with host(
        nostr_relay_url, start_daemon, tmp_path, "contextvm", down, blossom_server.url
    ) as (session, _):
        result = await session.call_tool("screenshot", {"selector": "#noise"})
    png = image_of(result)
    assert png.startswith(b"\x89PNG") and len(png) > LINK_AT_LEAST
    assert blossom_server.blobs == {} and blossom_server.fetched == []
    assert "goes in parts: no Blossom server took it" in caplog.text
    assert f"{down} answered unreachable" in caplog.text
    assert f"{blossom_server.url} answered HTTP 507 storage full" in caplog.text
    assert "Blossom" not in result.content[-1].text


@pytest.mark.parametrize("transport", ["contextvm", "dm"])
async def test_a_tampered_blob_is_refused_with_a_clear_error(
    nostr_relay_url, start_daemon, tmp_path: Path, blossom_server: BlossomServer, transport
):
    """A server that serves other bytes than it took: the host gets an error naming the check
    that failed, never the bytes; the next call is served."""
    async with host(nostr_relay_url, start_daemon, tmp_path, transport, blossom_server.url) as (
        session,
        _,
    ):
        blossom_server.tamper = True
        refused = await session.call_tool("pdf", {})
        title = await session.call_tool("get_title", {})
    [(x, _blob)] = blossom_server.blobs.items()
    assert blossom_server.fetched == [f"/{x}"]
    assert refused.is_error and len(refused.content) == 1
    text = refused.content[0].text
    assert text.startswith(f"REFUSED: The file at {blossom_server.url}/{x} is refused: "), text
    assert "does not match the message's x hash" in text
    assert not title.is_error


async def test_a_link_is_followed_only_when_it_checks_out(blossom_server: BlossomServer):
    """What mcp --to does with a link, against the Blossom server alone: the ox check, the
    address rule (http:// on loopback only from a daemon on this machine), the size the link
    gives, a missing blob."""
    data = os.urandom(4096)
    sealed = seal(data)
    blossom_server.blobs[sealed.x] = Blob(sealed.blob, "application/pdf", set(), 0)
    url = f"{blossom_server.url}/{sealed.x}"
    assert await fetch_file(link_of(url, sealed, "application/pdf", None), True) == data

    async def refusal(link: dict, local: bool = True) -> str:
        with pytest.raises(BrowserdError) as refused:
            await fetch_file(link, local)
        return f"{refused.value.code}: {refused.value.message}"

    lying = link_of(url, dataclasses.replace(sealed, ox="0" * 64), "application/pdf", None)
    assert "REFUSED: " in (text := await refusal(lying)) and "ox hash" in text, text
    # 0.0.0.0 reaches this machine too, but is no loopback address: refused unfetched.
    port = blossom_server.url.rsplit(":", 1)[1]
    away = link_of(f"http://0.0.0.0:{port}/{sealed.x}", sealed, "application/pdf", None)
    assert "http:// on loopback only from a daemon on this machine" in await refusal(away)
    # A daemon elsewhere gets no http:// at all, loopback included.
    loopback = link_of(url, sealed, "application/pdf", None)
    assert "is not https://" in await refusal(loopback, local=False)
    smaller = link_of(url, dataclasses.replace(sealed, size=100), "application/pdf", None)
    assert "larger than its link says" in await refusal(smaller)
    assert blossom_server.fetched == [f"/{sealed.x}"] * 3, "the address was never fetched"
    missing = link_of(f"{blossom_server.url}/{'1' * 64}", sealed, "application/pdf", None)
    gone = await refusal(missing)
    assert gone.startswith("UNAVAILABLE: ") and "HTTP 404" in gone, gone


async def test_a_daemon_elsewhere_cannot_point_mcp_to_at_this_machine(
    nostr_relay_url, start_daemon, tmp_path: Path, blossom_server: BlossomServer
):
    """The relay by this machine's name, not a loopback address: to mcp --to the daemon is
    elsewhere, so its link to http://127.0.0.1 is refused, and the server never sees a GET.
    (The same daemon by a loopback relay is followed: the tests above.)"""
    port = nostr_relay_url.rsplit(":", 1)[1]
    by_name = f"ws://{socket.gethostname()}:{port}"
    async with host(by_name, start_daemon, tmp_path, "dm", blossom_server.url) as (session, _):
        refused = await session.call_tool("pdf", {})
        title = await session.call_tool("get_title", {})
    assert len(blossom_server.blobs) == 1, "the daemon did put it on its Blossom server"
    assert blossom_server.fetched == [], "mcp --to never fetched the loopback link"
    assert refused.is_error, refused.content
    text = refused.content[0].text
    assert text.startswith("REFUSED: ") and "is not https://" in text, text
    assert not title.is_error
