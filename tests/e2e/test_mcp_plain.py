"""``mcp --local``'s own session on pipes (``mcp.plain``), driven by the mcp SDK's client,
on what tests/e2e/test_mcp_local.py leaves out: a large file's link read back, the log level
a host sets, ``ping``, and the JSON-RPC answers a host gets to what it should not ask."""

from __future__ import annotations

import json
from pathlib import Path

import mcp.types as types
import pytest
from mcp.shared.exceptions import MCPError
from mcp_types.version import LATEST_HANDSHAKE_VERSION

from tests.e2e.test_mcp_files import file_of, noise_page
from tests.e2e.test_mcp_local import local, local_config
from tests.e2e.test_mcp_local_start import host
from tests.fixtures.mcp_client import connect


async def test_a_large_pdf_comes_as_a_link_the_host_reads_back(tmp_path: Path) -> None:
    url, site = await noise_page(tmp_path)
    try:
        async with local(tmp_path) as session:
            assert not (await session.call_tool("open", {"url": url})).is_error
            printed = await session.call_tool("pdf", {})
            pdf = await file_of(session, printed)
            kept = (await session.list_resources()).resources
            with pytest.raises(MCPError, match="no longer kept"):
                await session.read_resource("nostr-browserd://files/gone/page.pdf")
    finally:
        site.shutdown()
        site.server_close()
    link = printed.content[0]
    assert link.type == "resource_link" and link.mime_type == "application/pdf"
    assert pdf.startswith(b"%PDF-") and link.size == len(pdf)
    assert [str(r.uri) for r in kept] == [str(link.uri)]


@pytest.mark.filterwarnings("ignore:.*logging capability.*")  # no host speaks 2026 yet
async def test_the_hosts_log_level_holds_back_the_events_below_it(
    tmp_path: Path, site_url: str
) -> None:
    notices: list[types.LoggingMessageNotificationParams] = []

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        notices.append(params)

    config = str(local_config(tmp_path))
    async with connect("--local", "--config", config, logging_callback=on_log) as session:
        await session.send_ping()
        await session.set_logging_level("warning")
        await session.call_tool("open", {"url": f"{site_url}/dialogs.html"})
        await session.call_tool("click", {"selector": "#alert"})
        await session.call_tool("dialog_accept", {})
        await session.send_ping()  # the notices written before its answer have been read
    events = [n.data["event"] for n in notices]
    assert events and set(events) == {"dialog"}, events
    assert all(n.level == "warning" for n in notices)


async def test_what_a_host_should_not_ask_gets_its_json_rpc_error(tmp_path: Path) -> None:
    """JSON nested past any sense, an unknown method, a tool call without a name, an unknown
    level: each its error, and the session goes on; a version the server does not speak is
    answered with the newest it does, as the SDK's server answers it."""
    async with host(local_config(tmp_path)) as client:
        assert client.proc.stdin is not None and client.proc.stdout is not None
        client.proc.stdin.write(b"[" * 100_000 + b"\n")  # past Python's recursion limit
        nested = json.loads(await client.proc.stdout.readline())
        unknown = await client.answer(await client.request("prompts/list", {}))
        nameless = await client.answer(await client.request("tools/call", {"arguments": {}}))
        level = await client.answer(await client.request("logging/setLevel", {"level": "loud"}))
        asked = {"protocolVersion": "1999-01-01", "capabilities": {}, "clientInfo": {}}
        again = await client.answer(await client.request("initialize", asked))
        opened = await client.call("open", url="about:blank")
    assert nested["id"] is None and nested["error"]["code"] == types.PARSE_ERROR, nested
    assert unknown["error"]["code"] == types.METHOD_NOT_FOUND, unknown
    assert nameless["error"]["code"] == types.INVALID_PARAMS, nameless
    assert level["error"]["code"] == types.INVALID_PARAMS, level
    assert again["result"]["protocolVersion"] == LATEST_HANDSHAKE_VERSION, again
    assert not opened.get("isError"), opened
