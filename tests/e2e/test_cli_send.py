"""The ``send`` CLI's promises, against a stand-in daemon on a real relay: it accepts only a
reply signed by the daemon that cites the request, and exits 4 when none comes."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from nostr_browserd.daemon.keyfile import write_new_key
from nostr_browserd.nostr import nip17
from nostr_browserd.nostr.nip01 import Event
from nostr_browserd.nostr.nip19 import npub_encode
from nostr_browserd.nostr.nip59 import gift_wrap, make_rumor, wrap
from nostr_browserd.nostr.relay import RelayPool
from nostr_browserd.nostr.signer import KeySigner
from tests.fixtures.daemon import forged_wrap, hand_seal, tampered
from tests.fixtures.leaks import LEAKS

CLI = str(Path(sys.executable).with_name("nostr-browserd"))

Reply = Callable[[KeySigner, str, str], Awaitable[Event]]  # (daemon, controller, request id)


def answer(url: str) -> str:
    return json.dumps({"id": "x", "success": True, "data": {"url": url}})


async def genuine(daemon: KeySigner, controller: str, request: str) -> Event:
    tags = [["p", controller], ["e", request]]
    return await wrap(make_rumor(daemon.pubkey, 14, answer("genuine"), tags), daemon, controller)


async def by_another_key(daemon: KeySigner, controller: str, request: str) -> Event:
    other = KeySigner.generate()
    tags = [["p", controller], ["e", request]]
    return await wrap(make_rumor(other.pubkey, 14, answer("forged"), tags), other, controller)


async def citing_another_request(daemon: KeySigner, controller: str, request: str) -> Event:
    tags = [["p", controller], ["e", "ab" * 32]]
    return await wrap(make_rumor(daemon.pubkey, 14, answer("forged"), tags), daemon, controller)


async def sealed_by_another_key(daemon: KeySigner, controller: str, request: str) -> Event:
    """The rumor claims the daemon; the seal is the attacker's."""
    return forged_wrap(
        KeySigner.generate(), daemon.pubkey, controller, answer("forged"), [["e", request]]
    )


async def with_a_bad_seal_signature(daemon: KeySigner, controller: str, request: str) -> Event:
    rumor = make_rumor(daemon.pubkey, 14, answer("forged"), [["p", controller], ["e", request]])
    return gift_wrap(tampered(hand_seal(rumor, daemon, controller)), controller)


BAD = [by_another_key, citing_another_request, sealed_by_another_key, with_a_bad_seal_signature]


async def stand_in_daemon(relay: str, daemon: KeySigner, replies: list[Reply]) -> None:
    """Wait for the one request to ``daemon``; answer it with ``replies``, in order."""
    async with RelayPool([relay]) as pool:
        sub = pool.subscribe([{"kinds": [1059], "#p": [daemon.pubkey]}])
        async for event in sub:
            opened = await nip17.open_dm(event, daemon)
            for make in replies:
                reply = await make(daemon, opened.sender, opened.rumor["id"])
                assert (await pool.publish(reply, 5)).ok
            return


async def send(
    relay: str,
    daemon: KeySigner,
    key: Path,
    replies: list[Reply],
    timeout: int,
    stdout: int = subprocess.PIPE,
):
    responder = asyncio.create_task(stand_in_daemon(relay, daemon, replies))
    try:
        proc = await asyncio.create_subprocess_exec(
            CLI,
            "send",
            "--to",
            npub_encode(daemon.pubkey),
            "--key",
            str(key),
            "--relay",
            relay,
            "--timeout",
            str(timeout),
            "--json",
            "get",
            "url",
            stdout=stdout,
            stderr=subprocess.PIPE,
        )
        out, err = await asyncio.wait_for(proc.communicate(), 60)
        await asyncio.wait_for(responder, 10)
    finally:
        responder.cancel()
    out = out or b""
    LEAKS.output(out + err, "nostr-browserd send's output")
    return proc.returncode, out.decode(), err.decode()


@pytest.mark.parametrize("bad", BAD, ids=lambda f: f.__name__)
async def test_send_ignores_a_reply_it_cannot_trust(local_relay_factory, tmp_path, bad) -> None:
    relay = await local_relay_factory()
    key = tmp_path / "controller.nsec"
    write_new_key(key)
    code, out, err = await send(relay.url, KeySigner.generate(), key, [bad, genuine], 30)
    assert code == 0, err
    assert json.loads(out)["data"]["url"] == "genuine", out


async def test_send_exits_4_when_no_trusted_reply_comes(local_relay_factory, tmp_path) -> None:
    relay = await local_relay_factory()
    key = tmp_path / "controller.nsec"
    write_new_key(key)
    code, out, err = await send(relay.url, KeySigner.generate(), key, BAD, 3)
    assert code == 4, (out, err)
    assert out == "" and "no reply within 3 s" in err


async def test_send_into_a_closed_pipe_exits_without_a_traceback(
    local_relay_factory, tmp_path
) -> None:
    """`send … | head` where the reader is gone: exit 1, and no Python traceback."""
    relay = await local_relay_factory()
    key = tmp_path / "controller.nsec"
    write_new_key(key)
    read, write = os.pipe()
    os.close(read)  # every write to it fails with EPIPE, as after head has exited
    try:
        code, _, err = await send(relay.url, KeySigner.generate(), key, [genuine], 30, write)
    finally:
        os.close(write)
    assert code == 1, err
    assert "Traceback" not in err and "BrokenPipe" not in err, err
