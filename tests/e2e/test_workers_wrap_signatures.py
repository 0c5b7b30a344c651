"""A gift wrap's signature is verified where its seal is opened (issue 36 §2), on the real
harness (tests/fixtures/cluster.py): two ``nostr-browserd run`` workers, PostgreSQL, two relays,
one of them behind a proxy that alters every gift wrap it hands a worker: it adds a NIP-40
``expiration`` in the past and recomputes the id, and the one-time key's signature no longer
fits.  The relay pool checks a wrap's id only, so the altered copy reaches the inbox:

- the worker that runs the controller's commands drops it, unopened and unremembered, and the
  same command, arriving later through the honest relay, still runs, once;
- the other worker keeps it aside sealed and never verifies it (what it spares: issue 36 §2).

Were the altered copy opened, the command would be answered as expired (its claim would also
spend the rumor's id, so the honest copy could not run).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
import time
from collections.abc import AsyncIterator
from typing import Any

import nostr_sdk as n
import pytest
from websockets.asyncio.client import connect
from websockets.asyncio.server import ServerConnection, serve
from websockets.exceptions import ConnectionClosed

from nostr_browserd.daemon.placement import preferred
from nostr_browserd.nostr.nip01 import event_id
from tests.e2e.test_workers import answered, until_status

pytestmark = pytest.mark.timeout(300)

NAMES = ["w1", "w2"]


def altered(frame: str) -> str:
    """A relay's frame, with a gift wrap given an expiration in the past (and a matching id)."""
    message = json.loads(frame)
    if message[0] != "EVENT" or message[2].get("kind") != 1059:
        return frame
    wrap = message[2]
    wrap["tags"] = [*wrap["tags"], ["expiration", str(int(time.time()) - 60)]]
    fields = (wrap["pubkey"], wrap["created_at"], wrap["kind"], wrap["tags"], wrap["content"])
    wrap["id"] = event_id(*fields)
    return json.dumps(message)


@contextlib.asynccontextmanager
async def altering_proxy(upstream: str) -> AsyncIterator[str]:
    """A websocket proxy to ``upstream`` that alters the gift wraps it passes down; its URL."""

    async def relay(ws: ServerConnection) -> None:
        async with connect(upstream) as up:

            async def down() -> None:
                async for frame in up:
                    await ws.send(altered(str(frame)))

            pumping = asyncio.create_task(down())
            with contextlib.suppress(ConnectionClosed):
                async for frame in ws:
                    await up.send(frame)
            pumping.cancel()

    async with serve(relay, "127.0.0.1", 0) as server:
        yield f"ws://127.0.0.1:{server.sockets[0].getsockname()[1]}"


async def publish_to(url: str, event: dict[str, Any]) -> None:
    """``event`` to one relay only, accepted."""
    async with connect(url) as ws:
        await ws.send(json.dumps(["EVENT", event]))
        ok = json.loads(await ws.recv())
        assert ok[0] == "OK" and ok[2], ok


async def test_an_altered_wrap_is_dropped_where_it_would_run_and_never_verified_elsewhere(
    cluster,
):
    [controller] = await cluster.controllers(1)
    while preferred(controller.pubkey, NAMES) != "w1":
        cluster.workers.controllers.remove(controller.pubkey)
        [controller] = await cluster.controllers(1)
    honest, behind_proxy = (r.url for r in cluster.relays)
    async with altering_proxy(behind_proxy) as proxy:
        cluster.workers.relays = [proxy, honest]
        cluster.workers.settings = {"state": {"lease": 15.0}}
        runner, bystander = await cluster.start_many(2)
        for worker in (runner, bystander):
            await until_status(worker, lambda s: s["live"] == NAMES)
        request = {"id": secrets.token_hex(6), "tool": "get_url"}
        wrap = json.loads(controller.nip17(cluster.pubkey, json.dumps(request)).as_json())
        await publish_to(behind_proxy, wrap)  # the workers get the altered copy only
        await until_status(runner, lambda s: s["inbox"]["bad_signatures"] == 1)
        await until_status(bystander, lambda s: s["inbox"]["wraps_opened"] >= 1)
        await publish_to(honest, wrap)  # the same wrap, as its sender signed it
        answers = await answered(controller, [request["id"]])
    assert [a["success"] for a in answers[request["id"]]] == [True], answers
    assert bystander.status()["inbox"]["bad_signatures"] == 0, "kept aside sealed, unverified"
    assert await controller.duplicates() == {}


def test_the_proxy_alters_a_wrap_under_a_new_id() -> None:
    """The proxy's alteration is one the relay pool lets through (its id fits) and the
    signature does not."""
    keys = n.Keys.generate()
    wrap = json.loads(n.nip17_make_private_msg(keys, keys.public_key(), "hi").as_json())
    changed = json.loads(altered(json.dumps(["EVENT", "s", wrap])))[2]
    assert changed["id"] != wrap["id"] and changed["sig"] == wrap["sig"]
