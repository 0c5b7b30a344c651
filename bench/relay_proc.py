"""A loopback relay in its own process: nostr-sdk's LocalRelay, no rate limit.

``python -m bench.relay_proc PORT`` prints ``ready`` once it listens and runs until stdin
closes, so the load generator, the relay and the system under test each have a process.
"""

from __future__ import annotations

import asyncio
import sys

import nostr_sdk as sdk


async def main(port: int) -> None:
    unlimited = sdk.RateLimit(max_reqs=5000, notes_per_minute=100_000_000)
    relay = sdk.LocalRelayBuilder().addr("127.0.0.1").port(port).rate_limit(unlimited).build()
    await relay.run()
    print("ready", flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
    relay.shutdown()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1])))
