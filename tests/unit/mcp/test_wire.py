"""``mcpshape.wire``'s dicts are what the MCP SDK's types say on the wire: ``mcp --local``'s
own session (``mcp.plain``) writes the dicts, the SDK's servers validate them into its types."""

from __future__ import annotations

import base64
from typing import Any

import mcp_types as types
import pytest
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from nostr_browserd.catalog import REGISTRY
from nostr_browserd.mcp.plain import HANDSHAKE_VERSIONS
from nostr_browserd.mcpshape import wire
from nostr_browserd.mcpshape.content import EMBED_LIMIT, Shelf, to_result


def dumped(model: types.MCPModel) -> dict[str, Any]:
    """As the SDK's servers write a model in a handshake version's session (``resultType`` is
    the 2026 protocol's: the SDK leaves it out there, and so do we)."""
    found = model.model_dump(by_alias=True, exclude_none=True, mode="json")
    found.pop("resultType", None)
    return found


def answer(data: Any) -> dict[str, Any]:
    return {"id": "1", "success": True, "data": data}


BLOB = base64.b64encode(b"x" * 10).decode()
RESPONSES = {
    "text": answer({"url": "https://example.org/", "title": "Example"}),
    "error": {"id": "1", "success": False, "error": {"code": "DENIED", "message": "No."}},
    "image": answer({"mime": "image/png", "base64": BLOB, "bytes": 10}),
    "pdf": answer({"mime": "application/pdf", "base64": BLOB}),
    "large": answer({"name": "report.csv", "base64": "x" * (EMBED_LIMIT + 4)}),
    "link": answer({"name": "a.pdf", "link": {"url": "https://blossom.example/ab", "key": "k"}}),
}


def test_every_tool_is_listed_as_the_sdk_lists_it() -> None:
    for tool in REGISTRY:
        entry = wire.tool_entry(tool)
        assert dumped(types.Tool.model_validate(entry)) == entry, tool.name


@pytest.mark.parametrize("kind", RESPONSES)
def test_each_result_is_the_sdks_result(kind: str) -> None:
    shelf = Shelf()
    result = wire.result(RESPONSES[kind], shelf)
    assert dumped(to_result(RESPONSES[kind], Shelf())).keys() == result.keys()
    assert result["isError"] is (kind == "error")
    assert dumped(types.CallToolResult.model_validate(result)) == result


def test_the_shelf_is_read_as_the_sdk_reads_it() -> None:
    shelf = Shelf()
    link = wire.result(RESPONSES["large"], shelf)["content"][0]
    assert link["type"] == "resource_link"
    contents, listing = shelf.contents(link["uri"]), shelf.resources()
    assert contents is not None and dumped(shelf.read(link["uri"])) == contents
    assert [dumped(r) for r in shelf.listing()] == listing
    assert shelf.contents("nostr-browserd://files/gone") is None


def test_initialize_agrees_to_the_sdks_handshake_versions() -> None:
    assert HANDSHAKE_VERSIONS == HANDSHAKE_PROTOCOL_VERSIONS
