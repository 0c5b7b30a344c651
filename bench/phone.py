"""A picture from the daemon to a phone, and a large file to ``mcp --to``: by link or in parts.

One loopback LocalRelay, one Blossom server (the tests' server, tests/fixtures/blossom.py:
the bench installs the ``test`` extra and imports the fixtures as it does for the relay and
the site) and one real Daemon (real Chromium) with ``[files] blossom_servers`` on it, on one
page of Python's docs, in one run:

- ``phone``: the phone is nostr-tools in Node with WebCrypto (bench/phone.mjs on
  tests/phone_js/chat.mjs, the tests' independent phone).  The text command ``screenshot``,
  timed until its kind 15 is unwrapped, its blob fetched, ``x`` and ``ox`` checked and the
  AES-GCM decrypted, against today's JSON ``screenshot``, timed until its numbered parts are
  joined, checked against their sha256 and the base64 decoded.  Interleaved.
- ``mcp``: a large file (a PDF of the page, a full-page screenshot) as ``mcp --to`` gets it
  today, in parts (our DM envelope, ``RemoteBackend``; and ContextVM's CEP-22 parts,
  ``ContextVmBackend``), against a prototype of the link path built here from our own client
  code: the text command, its kind 15 opened (``nip17.open_dm``), the blob fetched
  (``blossom.fetch``) and opened (``sealed.unseal``).  Interleaved.

Usage: ``.venv/bin/python -m bench.run --only phone`` (or ``python -m bench.phone [rounds]``).
"""

from __future__ import annotations

import asyncio
import base64
import json
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from nostr_browserd.daemon.app import Daemon
from nostr_browserd.daemon.config import Config
from nostr_browserd.dm.conversation import Conversation
from nostr_browserd.files import blossom
from nostr_browserd.files.sealed import read_file_message, unseal
from nostr_browserd.mcp.contextvm_remote import ContextVmBackend
from nostr_browserd.mcp.remote import RemoteBackend
from nostr_browserd.nostr import nip17
from nostr_browserd.nostr.nip01 import tag_values
from nostr_browserd.nostr.nip59 import UnwrapError
from nostr_browserd.nostr.relay import RelayPool
from nostr_browserd.nostr.signer import KeySigner
from tests.fixtures.blossom import BlossomServer
from tests.fixtures.relays import LocalRelayHandle, free_port

from . import sites

HERE = Path(__file__).resolve().parent
PAGE = "controlflow"  # the phone's page: a tutorial page, a PNG of ~130 KB
# mcp --to's large files: (page, text command, tool params, whether ContextVM carries it).
# ContextVM answers a file over 1 MB of base64 with a resource link to the daemon's shelf
# (mcpshape.content.EMBED_LIMIT), not its bytes, so only the picture is timed that way.
LARGE = {
    "pdf": ("stdtypes", "pdf", {}, False),
    "full-page screenshot": ("library/index", "screenshot --full_page", {"full_page": True}, True),
}
MB = 1024 * 1024


def daemon_config(relay: str, state: str, controllers: list[str], blossom_url: str) -> Config:
    return Config.model_validate(
        {
            "nostr": {
                "relays": [relay],
                "embedded_relay": False,
                "controllers": controllers,
                "dm": ["nip17"],
            },
            "state": {"dir": state},
            "local": {"enabled": False},
            "browser": sites.BENCH_BROWSER,
            "files": {"blossom_servers": [blossom_url], "max_mb": 50},
        }
    )


async def node_phone(
    relay: str, phone: KeySigner, daemon: str, rounds: int, page: str
) -> dict[str, list[dict[str, Any]]]:
    """bench/phone.mjs's rows: ``file`` (the kind 15 way) and ``json`` (the parts)."""
    node = shutil.which("node")
    if node is None:
        raise RuntimeError("Node.js is needed for the phone's side (apt install nodejs)")
    if not (HERE.parent / "tests" / "phone_js" / "node_modules" / "nostr-tools").is_dir():
        raise RuntimeError("the JS phone is not installed: run scripts/setup.sh")
    args = [relay, phone.secret.hex(), daemon, str(rounds), "screenshot"]
    args += [json.dumps({"tool": "screenshot"}), f"open {page}"]
    proc = await asyncio.create_subprocess_exec(
        node,
        str(HERE / "phone.mjs"),
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), 60 + 30 * rounds)
    if proc.returncode != 0:
        raise RuntimeError(f"the JS phone failed: {err.decode()[-500:]}")
    rows: dict[str, list[dict[str, Any]]] = json.loads(out)
    return rows


class LinkClient:
    """The link path ``mcp --to`` could take, prototyped from our own client code: a text
    command, and the bytes of the file message that answers it."""

    def __init__(self, pool: RelayPool, signer: KeySigner, daemon: str) -> None:
        self.pool, self.signer, self.daemon = pool, signer, daemon
        self.sub = pool.subscribe(
            [{"kinds": [1059], "#p": [signer.pubkey], "limit": 0}], advance_since=False
        )

    async def fetch(self, text: str) -> tuple[bytes, int]:
        """The file answering ``text``, fetched and checked; and the wraps' bytes it took."""
        talk = Conversation(self.signer, self.daemon, nip04=False)
        result = await self.pool.publish(await talk.request(text), timeout=10)
        assert result.ok, result.refused
        wire, data, replied = 0, None, False
        async with asyncio.timeout(60):
            async for wrap in self.sub:
                try:
                    opened = await nip17.open_dm(wrap, self.signer, kinds={14, 15}, verified=True)
                except UnwrapError:  # a ContextVM answer to the same key
                    continue
                if opened.sender != self.daemon or talk.request_event_id not in tag_values(
                    opened.rumor, "e"
                ):
                    continue  # not the daemon's, or another call's (the backends share the key)
                wire += len(json.dumps(wrap))
                rumor = opened.rumor
                if rumor["kind"] == nip17.FILE_KIND:
                    message = read_file_message(rumor["content"], rumor["tags"])
                    deadline = time.monotonic() + 30
                    status, _, blob = await asyncio.to_thread(
                        blossom.fetch, message.url, 50 * MB, None, deadline
                    )
                    assert status == 200, status
                    data, wire = unseal(message, blob), wire + len(blob)
                else:
                    assert "as a file message" in rumor["content"], rumor["content"]  # or follows
                    replied = True
                if data is not None and replied:
                    return data, wire
        raise AssertionError("the subscription ended")


async def _no_progress(done: float, total: float | None, message: str) -> None:
    return None


def image_bytes(answer: Any) -> int:
    """The size of the picture in a ContextVM answer (MCP ``image`` content, inline)."""
    images = [c for c in getattr(answer, "content", []) if getattr(c, "type", "") == "image"]
    assert not answer.is_error and images, str(answer)[:300]
    return len(base64.b64decode(images[0].data))


async def mcp_files(
    relay: str, agent: KeySigner, daemon: str, docs: str, rounds: int
) -> dict[str, dict[str, list[dict[str, float]]]]:
    """For each large file: seconds and bytes by each way, interleaved."""
    dm = RemoteBackend(agent, daemon, [relay], timeout=120)
    cvm = ContextVmBackend(agent, daemon, [relay], timeout=120)
    await dm.start()
    await cvm.start()
    rows: dict[str, dict[str, list[dict[str, float]]]] = {}
    try:
        async with RelayPool([relay]) as pool:
            link = LinkClient(pool, agent, daemon)
            await pool.wait_connected(5)
            await link.sub.wait_eose(5)

            for name, (page, text, params, inline) in LARGE.items():
                tool = text.split()[0]
                opened = await dm.call("open", {"url": docs + sites.DOC_PAGES[page]}, _no_progress)
                assert opened.get("success"), opened

                async def by_link(text: str = text) -> dict[str, float]:
                    data, wire = await link.fetch(text)
                    return {"size": len(data), "wire": wire}

                async def by_dm(tool: str = tool, params: dict[str, Any] = params) -> dict:
                    answer = await dm.call(tool, params, _no_progress)
                    assert answer.get("success"), str(answer)[:300]
                    return {"size": answer["data"]["bytes"]}

                async def by_cvm(tool: str = tool, params: dict[str, Any] = params) -> dict:
                    return {"size": image_bytes(await cvm.call(tool, params, _no_progress))}

                ways: dict[str, Callable[[], Awaitable[dict[str, float]]]] = {
                    "link": by_link,
                    "dm parts": by_dm,
                }
                if inline:
                    ways["contextvm parts"] = by_cvm
                rows[name] = await interleaved(ways, rounds)
    finally:
        await dm.close()
        await cvm.close()
    return rows


async def interleaved(
    ways: dict[str, Callable[[], Awaitable[dict[str, float]]]], rounds: int
) -> dict[str, list[dict[str, float]]]:
    """Each way once to warm up, then ``rounds`` rounds, each way in turn (rotated)."""
    for way in ways.values():
        await way()
    rows: dict[str, list[dict[str, float]]] = {name: [] for name in ways}
    names = list(ways)
    for i in range(rounds):
        for name in names[i % len(names) :] + names[: i % len(names)]:
            started = time.perf_counter()
            row = await ways[name]()
            rows[name].append({"ms": (time.perf_counter() - started) * 1000, **row})
    return rows


async def main(rounds: int) -> dict[str, Any]:
    relay = LocalRelayHandle(free_port(), None)
    await relay.start()
    blossom_server = BlossomServer()
    blossom_server.start()
    phone, agent = KeySigner.generate(), KeySigner.generate()
    daemon: Daemon | None = None
    try:
        with tempfile.TemporaryDirectory() as state, sites.docs() as docs:
            config = daemon_config(
                relay.url, state, [phone.pubkey, agent.pubkey], blossom_server.url
            )
            daemon = Daemon(config)
            await daemon.start()
            me = await daemon.identity.signer.public_key()
            page = docs + sites.DOC_PAGES[PAGE]
            results: dict[str, Any] = {"page": PAGE}
            results["phone"] = await node_phone(relay.url, phone, me, rounds, page)
            results["mcp"] = await mcp_files(relay.url, agent, me, docs, max(3, rounds // 3))
            results["mcp_pages"] = {name: spec[0] for name, spec in LARGE.items()}
            return results
    finally:
        if daemon is not None:
            await daemon.stop()
        blossom_server.stop()
        relay.stop()


def summary(results: dict[str, Any]) -> None:
    """What the run measured, on stdout."""
    for way, rows in results["phone"].items():
        ms = [r["ms"] for r in rows]
        low, high = min(ms), max(ms)
        print(f"  phone {way:5} median {statistics.median(ms):7.1f} ms, {low:.0f}–{high:.0f}")
    for name, ways in results["mcp"].items():
        for way, rows in ways.items():
            ms = [r["ms"] for r in rows]
            print(f"  mcp {name} {way:16} median {statistics.median(ms):7.1f} ms")


if __name__ == "__main__":
    found = asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 9))
    summary(found)
    print(json.dumps(found)[:2000])
