"""The echo: the load generator's own floor, with no crypto at all on the answering side.

It reads, per wrap id, the reply the generator built in advance (bench/loadgen.py's ``echo``
table), and publishes it as soon as the wrap arrives, on a connection apart from the one it
reads on, as the systems under test do.  What it reaches is what the generator and the relay
can carry: to measure a system, the generator must reach several times that system's rate.
``python -m bench.echo RELAY_URL TABLE_FILE PUBKEY`` prints ``ready`` and serves until stdin
closes.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

from websockets.asyncio.client import ClientConnection, connect

from .loadgen import ack_now, subscribe


async def drain(ws: ClientConnection) -> None:
    """Read the relay's OKs, so that they never back up and stall the connection."""
    async for _ in ws:
        pass


async def serve(url: str, table: dict[str, str], pubkey: str) -> None:
    async with connect(url, max_size=2**24) as reader, connect(url, max_size=2**24) as writer:
        draining = asyncio.create_task(drain(writer))
        await subscribe(reader, "echo", {"kinds": [1059], "#p": [pubkey], "limit": 0})
        print("ready", flush=True)
        async for raw in reader:
            ack_now(reader)
            message = json.loads(raw)
            if message[0] == "EVENT" and (reply := table.get(message[2]["id"])):
                await writer.send(reply)
        draining.cancel()


async def main(url: str, table_file: str, pubkey: str) -> None:
    table = json.loads(Path(table_file).read_text())
    serving = asyncio.create_task(serve(url, table, pubkey))
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
    serving.cancel()


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:4]))
