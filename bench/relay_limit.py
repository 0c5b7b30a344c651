"""A relay's rate limit as a worker meets it: events one connection may publish in a burst.

nostr-sdk's LocalRelay with its default settings (the limit the tests and benchmarks lift) gets
``events`` signed kind 4 events, each sent once the previous one's OK is in, on one connection;
then one event on a new connection, and one from another key on a new connection.  Prints how
many were accepted, the refusals' reasons, and whether a new connection starts afresh.

Usage: ``.venv/bin/python -m bench.relay_limit [events]`` (default 120).
"""

from __future__ import annotations

import asyncio
import json
import sys

import nostr_sdk as sdk
from websockets.asyncio.client import ClientConnection, connect

from nostr_browserd.nostr.nip01 import now
from nostr_browserd.nostr.signer import KeySigner

from .sites import free_port


async def publish(ws: ClientConnection, key: KeySigner, text: str) -> tuple[bool, str]:
    """One kind 4 event; the relay's OK: (accepted, reason)."""
    event = await key.sign_event(
        {"kind": 4, "content": text, "tags": [["p", key.pubkey]], "created_at": now()}
    )
    await ws.send(json.dumps(["EVENT", event]))
    while True:
        message = json.loads(await ws.recv())
        if message[0] == "OK":
            return message[2], message[3]


async def probe(events: int) -> dict[str, object]:
    port = free_port()
    relay = sdk.LocalRelayBuilder().addr("127.0.0.1").port(port).build()
    await relay.run()
    url, key = f"ws://127.0.0.1:{port}", KeySigner.generate()
    try:
        async with connect(url, proxy=None) as ws:
            answers = [await publish(ws, key, f"event {i}") for i in range(events)]
        async with connect(url, proxy=None) as ws:
            new_connection = await publish(ws, key, "same key, new connection")
        async with connect(url, proxy=None) as ws:
            other_key = await publish(ws, KeySigner.generate(), "another key, new connection")
    finally:
        relay.shutdown()
    return {
        "relay": "nostr-sdk LocalRelay, default settings",
        "sent_on_one_connection": events,
        "accepted": sum(ok for ok, _ in answers),
        "first_refused_at": next((i for i, (ok, _) in enumerate(answers) if not ok), None),
        "refusals": sorted({why for ok, why in answers if not ok}),
        "same_key_new_connection_accepted": new_connection[0],
        "other_key_new_connection_accepted": other_key[0],
    }


def main() -> None:
    events = int(sys.argv[1]) if len(sys.argv) > 1 else 120
    print(json.dumps(asyncio.run(probe(events)), indent=2))


if __name__ == "__main__":
    main()
