"""NIP-44's extended length prefix as nostr-tools writes it (2.25.5, pinned in
tests/nip44_js/package-lock.json): a payload over 65,535 bytes, and a NIP-17 gift wrap of one
that crossed a real relay, both opened by our side.  Before we read the 6-byte prefix, both
were dropped as malformed.  scripts/setup.sh installs the package with ``npm ci``; without
Node.js the test is skipped (under ``CI=true`` it fails).
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json

from nostr_browserd.nostr import nip44, nip59
from nostr_browserd.nostr.relay import RelayPool
from nostr_browserd.nostr.signer import KeySigner
from tests.fixtures.leaks import LEAKS
from tests.fixtures.paths import TESTS

JS_DIR = TESTS / "nip44_js"
U16_MOST = 1 + 32 + 2 + 65536 + 32  # the longest payload a 2-byte prefix makes, decoded


async def written_by_nostr_tools(node: str, sender: KeySigner, to: str, chars: int) -> dict:
    proc = await asyncio.create_subprocess_exec(
        node,
        "big.mjs",
        sender.secret.hex(),
        to,
        str(chars),
        cwd=JS_DIR,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 0, err.decode()
    return json.loads(out)


def digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


async def test_a_message_over_64_kib_from_nostr_tools_is_read(node, nostr_relay_url) -> None:
    assert (JS_DIR / "node_modules" / "nostr-tools").is_dir(), (
        "nostr-tools is not installed: run scripts/setup.sh (npm ci in tests/nip44_js)"
    )
    them, us = KeySigner.generate(), KeySigner.generate()
    LEAKS.key(them.secret.hex(), "the nostr-tools side's key")
    sent = await written_by_nostr_tools(node, them, us.pubkey, 70_000)
    assert sent["bytes"] > nip44.MAX_PLAINTEXT
    assert len(base64.b64decode(sent["payload"])) > U16_MOST  # only the 6-byte prefix fits it

    text = nip44.decrypt(sent["payload"], nip44.conversation_key(us.secret, them.pubkey))
    assert digest(text) == sent["text_sha256"]

    wrap = sent["wrap"]
    async with RelayPool([nostr_relay_url]) as pool:
        inbox = pool.subscribe([{"kinds": [1059], "#p": [us.pubkey]}], advance_since=False)
        assert (await pool.publish(wrap, timeout=10)).ok
        async with asyncio.timeout(10):
            arrived = await anext(aiter(inbox))
    opened = await nip59.unwrap(arrived, us, verified=True)
    assert opened.sender == them.pubkey
    assert digest(opened.rumor["content"]) == sent["text_sha256"]
