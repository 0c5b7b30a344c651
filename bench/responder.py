"""The minimal responder in its own process: nostr-sdk's Rust crypto, no browser, no guard.

It unwraps each NIP-17 command addressed to it and answers ``get_url`` with a constant, the
floor the daemon is measured against.  Replies are published without waiting for the
relay's OK before the next command is read (the daemon does not wait either).
``python -m bench.responder RELAY_URL`` reads its secret key (hex) from stdin's first line,
prints ``ready`` and serves until stdin closes.
"""

from __future__ import annotations

import asyncio
import json
import sys

import nostr_sdk as sdk

from nostr_browserd.nostr.relay import RelayPool

from .bench_dm import answer


async def serve(url: str, keys: sdk.Keys) -> None:
    me = keys.public_key().to_hex()
    publishing: set[asyncio.Task[object]] = set()
    async with RelayPool([url]) as pool:
        sub = pool.subscribe([{"kinds": [1059], "#p": [me], "limit": 0}], advance_since=False)
        await pool.wait_connected(5)
        await sub.wait_eose(5)
        print("ready", flush=True)
        async for wrap in sub:
            gift = sdk.UnwrappedGift.from_gift_wrap(keys, sdk.Event.from_json(json.dumps(wrap)))
            text = answer(gift.rumor().content(), "about:blank")
            reply = sdk.nip17_make_private_msg(keys, gift.sender(), text)
            task = asyncio.create_task(pool.publish(json.loads(reply.as_json()), timeout=5))
            publishing.add(task)
            task.add_done_callback(publishing.discard)


async def main(url: str) -> None:
    keys = sdk.Keys.parse(sys.stdin.readline().strip())
    serving = asyncio.create_task(serve(url, keys))
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
    serving.cancel()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
