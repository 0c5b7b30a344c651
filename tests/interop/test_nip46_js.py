"""Our bunker client's NIP-44 transport against an independent NIP-46 remote signer:
applesauce-signers' ``NostrConnectProvider`` (JavaScript, from npm, pinned in
tests/nip46_js/package-lock.json), run with Debian's Node.js.  scripts/setup.sh installs it
with ``npm ci`` when ``node`` is there; .ci/run installs Debian's ``nodejs`` and ``npm``.
Without Node.js the test is skipped; with Node.js but without the packages it fails.
"""

from __future__ import annotations

import asyncio

import pytest

from nostr_browserd.login.bunker import BunkerSigner
from nostr_browserd.nostr import nip46
from nostr_browserd.nostr.signer import KeySigner
from tests.e2e.test_login_bunker import exercise
from tests.fixtures.leaks import LEAKS
from tests.fixtures.paths import TESTS

LEAKS.secret("js-pairing-secret", "the JS signer's pairing secret")
SIGNER_DIR = TESTS / "nip46_js"


async def start_signer(node: str, relay_url: str, user: KeySigner, secret: str, mode: str):
    """The JS signer in a subprocess; returns it and the bunker:// URL it printed."""
    assert (SIGNER_DIR / "node_modules" / "applesauce-signers").is_dir(), (
        "the JS signer is not installed: run scripts/setup.sh (npm ci in tests/nip46_js)"
    )
    proc = await asyncio.create_subprocess_exec(
        node,
        "signer.mjs",
        relay_url,
        user.secret.hex(),
        secret,
        mode,
        cwd=SIGNER_DIR,
        stdout=asyncio.subprocess.PIPE,
    )
    assert proc.stdout is not None
    url = (await asyncio.wait_for(proc.stdout.readline(), 30)).decode().strip()
    return proc, url


@pytest.mark.parametrize("mode", ["same-key", "own-key"])
async def test_our_client_against_an_independent_js_signer(node, local_relay_factory, mode) -> None:
    relay = await local_relay_factory()
    user = KeySigner.generate()
    proc, url = await start_signer(node, relay.url, user, "js-pairing-secret", mode)
    try:
        pointer = nip46.parse_bunker_url(url)
        assert (pointer.pubkey == user.pubkey) is (mode == "same-key")
        signer = await BunkerSigner.connect(url, timeout=5)
        try:
            assert signer.describe()["transport"] == "nip44"
            assert signer.describe()["remote_signer"] == pointer.pubkey
            await exercise(signer, user)
        finally:
            await signer.aclose()
    finally:
        proc.kill()
        await proc.wait()
