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
- ``mcp``: a large file (a PDF of the page, a full-page screenshot) as ``mcp --to`` gets it:
  by a sealed Blossom link (``files.link``: the daemon uploads it, the client fetches, checks
  and decrypts it) against in parts, each over our DM envelope (``RemoteBackend``) and over
  ContextVM (``ContextVmBackend``, CEP-22 parts), the parts asked for with ``links=False``.
  Interleaved.

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
from nostr_browserd.mcp.contextvm_remote import ContextVmBackend
from nostr_browserd.mcp.remote import RemoteBackend
from nostr_browserd.nostr.signer import KeySigner
from tests.fixtures.blossom import BlossomServer
from tests.fixtures.relays import LocalRelayHandle, free_port

from . import sites

HERE = Path(__file__).resolve().parent
PAGE = "controlflow"  # the phone's page: a tutorial page, a PNG of ~130 KB
# mcp --to's large files: (page, tool, params).
LARGE = {
    "pdf": ("stdtypes", "pdf", {}),
    "full-page screenshot": ("library/index", "screenshot", {"full_page": True}),
}


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


async def _no_progress(done: float, total: float | None, message: str) -> None:
    return None


def file_bytes(answer: Any) -> int:
    """The size of the file in an answer: the protocol's base64, or MCP content (an image,
    an embedded resource), as the host gets it."""
    if isinstance(answer, dict):
        assert answer.get("success"), str(answer)[:300]
        return len(base64.b64decode(answer["data"]["base64"]))
    assert not answer.is_error, str(answer)[:300]
    first = answer.content[0]
    return len(base64.b64decode(first.data if first.type == "image" else first.resource.blob))


async def mcp_files(
    relay: str, agent: KeySigner, daemon: str, docs: str, blossom_server: BlossomServer, rounds: int
) -> dict[str, dict[str, list[dict[str, float]]]]:
    """For each large file: seconds by each way, interleaved (the links, checked, counted)."""
    backends: dict[str, Any] = {
        "dm link": RemoteBackend(agent, daemon, [relay], timeout=120),
        "dm parts": RemoteBackend(agent, daemon, [relay], timeout=120, links=False),
        "contextvm link": ContextVmBackend(agent, daemon, [relay], timeout=120),
        "contextvm parts": ContextVmBackend(agent, daemon, [relay], timeout=120, links=False),
    }
    for backend in backends.values():
        await backend.start()
    rows: dict[str, dict[str, list[dict[str, float]]]] = {}
    try:
        for name, (page, tool, params) in LARGE.items():
            url = docs + sites.DOC_PAGES[page]
            opened = await backends["dm parts"].call("open", {"url": url}, _no_progress)
            assert opened.get("success"), opened

            def way(backend: Any, tool: str = tool, params: dict[str, Any] = params) -> Any:
                async def timed() -> dict[str, float]:
                    before = len(blossom_server.fetched)
                    size = file_bytes(await backend.call(tool, params, _no_progress))
                    return {"size": size, "fetched": len(blossom_server.fetched) - before}

                return timed

            rows[name] = await interleaved({k: way(b) for k, b in backends.items()}, rounds)
            for way_name, way_rows in rows[name].items():
                fetched = {r["fetched"] for r in way_rows}
                assert fetched == ({1} if "link" in way_name else {0}), (way_name, fetched)
    finally:
        for backend in backends.values():
            await backend.close()
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
            results["mcp"] = await mcp_files(
                relay.url, agent, me, docs, blossom_server, max(3, rounds // 3)
            )
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
