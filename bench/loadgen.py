"""The load generator in its own process, kept light so that it does not steal the CPU it measures.

Every command is gift-wrapped (nostr-sdk) before the clock starts; the timed part only sends
pre-built ``EVENT`` frames and matches replies to controllers by their ``p`` tag, without
decrypting them.  Commands go out on a publishing connection per relay and replies come in on a
reading connection of their own, as our RelayPool does: a command sent on the socket its
reply arrives on waits for the kernel's delayed ACK (~40 ms, bench_relay.py), and the
generator would measure that stall instead of the system under test.  Each controller is a
closed loop: its next command leaves when its previous reply arrives.  Replies are decrypted
and checked (success, the id asked for) after the clock stops.

Protocol on stdio: one JSON line in (``relays``, ``target`` pubkey, ``keys`` (hex secrets),
``per_controller``, ``tool``, ``params``); ``ready`` out once wrapped and subscribed; ``go`` in;
one JSON line out with the timings, the generator's own CPU seconds, the check and the run's
id (its request ids' prefix).  Every command goes to every relay (as a controller's client
sends it); replies are read on the first.  With ``echo`` (``secret``, ``table``) it also writes,
before ``ready``, the reply each wrap should get (signed by that key) to the file ``table``,
for bench/echo.py: the generator's own floor.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import resource
import secrets
import socket
import sys
import time
from pathlib import Path
from typing import Any

import nostr_sdk as sdk
from websockets.asyncio.client import ClientConnection, connect


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def prepare(config: dict[str, Any], run: str) -> tuple[list[sdk.Keys], list[list[tuple[str, str]]]]:
    """Per controller, its commands as (request id ``run-controller-n``, EVENT frame)."""
    keys = [sdk.Keys.parse(k) for k in config["keys"]]
    target = sdk.PublicKey.parse(config["target"])
    plans = []
    for i, key in enumerate(keys):
        plan = []
        for j in range(config["per_controller"]):
            request_id = f"{run}-{i}-{j}"
            request = json.dumps(
                {"id": request_id, "tool": config["tool"], "params": config["params"]}
            )
            wrap = sdk.nip17_make_private_msg(key, target, request).as_json()
            plan.append((request_id, f'["EVENT",{wrap}]'))
        plans.append(plan)
    if "echo" in config:
        write_echo_table(config["echo"], plans, keys)
    return keys, plans


def write_echo_table(
    echo: dict[str, str], plans: list[list[tuple[str, str]]], keys: list[sdk.Keys]
) -> None:
    """Per wrap id, the frame of a successful reply to it from ``echo["secret"]``, written to
    ``echo["table"]``: what bench/echo.py publishes without opening anything."""
    signer = sdk.Keys.parse(echo["secret"])
    table = {}
    for key, plan in zip(keys, plans, strict=True):
        for request_id, frame in plan:
            wrap_id = json.loads(frame[len('["EVENT",') : -1])["id"]
            reply = json.dumps({"id": request_id, "success": True, "result": "about:blank"})
            event = sdk.nip17_make_private_msg(signer, key.public_key(), reply).as_json()
            table[wrap_id] = f'["EVENT",{event}]'
    Path(echo["table"]).write_text(json.dumps(table))


def ack_now(ws: ClientConnection) -> None:
    """TCP_QUICKACK on the reading socket, once per frame (it is not sticky), as the RelayPool
    does: the relay's Nagle then never waits for our ACK."""
    sock = ws.transport.get_extra_info("socket")
    if sock is not None and hasattr(socket, "TCP_QUICKACK"):
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_QUICKACK, 1)


async def subscribe(ws: ClientConnection, name: str, wanted: dict[str, Any]) -> None:
    """REQ on ``ws`` and read up to its EOSE, acknowledging every frame.

    The EOSE too: unacknowledged, it holds the relay's next frame on this connection (the
    first command, or the first reply) behind our delayed ACK, ~40 ms; that stall was most of
    a short run's time at 10 controllers.
    """
    await ws.send(json.dumps(["REQ", name, wanted]))
    while True:
        frame = json.loads(await ws.recv())
        ack_now(ws)
        if frame[0] == "EOSE":
            return


def check(
    keys: list[sdk.Keys], replies: list[list[dict[str, Any]]], ids: list[list[str]]
) -> dict[str, Any]:
    """Decrypt every reply: how many succeeded and answered the request they followed, and how
    many answered a request that had been answered already (a command run twice)."""
    ok, failed, duplicates, codes, answered = 0, 0, 0, {}, set()
    for key, events, wanted in zip(keys, replies, ids, strict=True):
        for event, request_id in zip(events, wanted, strict=False):
            gift = sdk.UnwrappedGift.from_gift_wrap(key, sdk.Event.from_json(json.dumps(event)))
            reply = json.loads(gift.rumor().content())
            duplicates += reply.get("id") in answered
            answered.add(reply.get("id"))
            if reply.get("success") and reply.get("id") == request_id:
                ok += 1
            else:
                failed += 1
                code = (reply.get("error") or {}).get("code", "wrong id")
                codes[code] = codes.get(code, 0) + 1
    return {"ok": ok, "failed": failed, "codes": codes, "duplicates": duplicates}


async def main() -> None:
    config = json.loads(sys.stdin.readline())
    run = secrets.token_hex(4)
    keys, plans = prepare(config, run)
    index = {k.public_key().to_hex(): i for i, k in enumerate(keys)}
    n = len(keys)
    replies: list[list[dict[str, Any]]] = [[] for _ in range(n)]
    latencies: list[float] = []
    refused: list[str] = []
    sent_at = [0.0] * n
    next_command = [0] * n
    done = asyncio.Event()
    remaining = sum(len(p) for p in plans)
    loop = asyncio.get_running_loop()
    stdin = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(stdin), sys.stdin)
    async with contextlib.AsyncExitStack() as stack:
        sockets = [
            await stack.enter_async_context(connect(url, max_size=2**24))
            for url in config["relays"]
        ]
        reader = await stack.enter_async_context(connect(config["relays"][0], max_size=2**24))
        await subscribe(reader, "replies", {"kinds": [1059], "#p": list(index), "limit": 0})

        async def send(i: int) -> None:
            sent_at[i] = time.perf_counter()
            frame = plans[i][next_command[i]][1]
            for sock in sockets:  # each send only writes to its transport: no task per relay
                await sock.send(frame)
            next_command[i] += 1

        async def receive(sock: ClientConnection) -> None:
            """Refusals from every publishing connection; replies on the reading one."""
            nonlocal remaining
            async for raw in sock:
                ack_now(sock)
                message = json.loads(raw)
                if message[0] == "OK" and not message[2]:
                    refused.append(message[3])
                if message[0] != "EVENT":
                    continue
                event = message[2]
                i = next((index[t[1]] for t in event["tags"] if t[0] == "p"), None)
                if i is None:
                    continue
                latencies.append((time.perf_counter() - sent_at[i]) * 1000)
                replies[i].append(event)  # serialised again for the check, after the clock
                remaining -= 1
                if next_command[i] < len(plans[i]):
                    await send(i)
                elif remaining == 0:
                    done.set()

        receiving = [asyncio.create_task(receive(sock)) for sock in [reader, *sockets]]
        print("ready", flush=True)
        await stdin.readline()  # go
        cpu, started = cpu_seconds(), time.perf_counter()
        for i in range(n):
            await send(i)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(done.wait(), config.get("timeout", 120))
        seconds, cpu = time.perf_counter() - started, cpu_seconds() - cpu
        for task in receiving:
            task.cancel()
    ids = [[request_id for request_id, _ in plan] for plan in plans]
    result = {
        "controllers": n,
        "sent": sum(next_command),
        "answered": len(latencies),
        "seconds": seconds,
        "cpu_s": cpu,
        "latencies_ms": latencies,
        "refused": refused[:5],
        "check": check(keys, replies, ids),
        "run": run,
    }
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    asyncio.run(main())
