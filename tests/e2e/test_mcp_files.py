"""``mcp --to``'s large files, end to end: a real daemon on a real relay with a real Chromium,
the real CLI as the host's MCP server (mcp SDK client), and the test Blossom server.

A file reaches the host as it would from ``mcp --local``: a picture as ``image`` content, a
PDF as an embedded resource, or over the embed limit as a resource link the host reads from
``mcp --to``'s own shelf.  With ``[files] blossom_servers`` on the daemon, files of at least
``files.link.LINK_AT_LEAST`` bytes come by a sealed Blossom link instead of in parts.
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import mcp.types as types
from mcp import ClientSession

from tests.fixtures.daemon import SdkController, start_daemon_fixture  # noqa: F401
from tests.fixtures.mcp_client import connect
from tests.fixtures.site import serve_directory

# Random pixels do not compress: a PDF of this page is about 1 MB, over the embed limit once
# in base64 (mcpshape.content.EMBED_LIMIT), and its screenshot about 1 MB of PNG.
SIDE = 580
NOISE = f"""<!doctype html><html><body style="margin:0">
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
