"""Our ``mcp --to`` client over ContextVM, against a stand-in server from the official SDK
(``@contextvm/sdk``'s NostrServerTransport), and choosing its transport against our daemon."""

from __future__ import annotations

import base64
from pathlib import Path

from nostr_browserd.nostr.nip19 import npub_encode, nsec_encode
from nostr_browserd.nostr.signer import KeySigner
from tests.fixtures.contextvm import JsServer
from tests.fixtures.daemon import daemon_pubkey, start_daemon_fixture  # noqa: F401
from tests.fixtures.mcp_client import connect


def key_file(signer: KeySigner, path: Path) -> Path:
    """The agent's key as ``--key`` takes it: an nsec, owner-only."""
    path.write_text(nsec_encode(signer.secret))
    path.chmod(0o600)
    return path


async def test_mcp_to_speaks_contextvm_to_the_sdks_server(node, nostr_relay_url, tmp_path) -> None:
    server, agent = KeySigner.generate(), KeySigner.generate()
    key = key_file(agent, tmp_path / "agent.nsec")
    async with JsServer(node, nostr_relay_url, server, agent.pubkey):
        args = ("--to", npub_encode(server.pubkey), "--key", str(key))
        args += ("--relay", nostr_relay_url, "--transport", "contextvm")
        async with connect(*args) as session:
            listed = sorted(t.name for t in (await session.list_tools()).tools)
            snap = await session.call_tool("snapshot", {"interactive": True})
            shot = await session.call_tool("screenshot", {})
    assert listed == ["screenshot", "snapshot"], "what their server lists, known to us"
    assert not snap.is_error and snap.content[0].text == 'snapshot {"interactive":true}'
    assert shot.content[0].type == "image" and shot.content[0].mime_type == "image/png"
    assert base64.b64decode(shot.content[0].data).startswith(b"\x89PNG")
