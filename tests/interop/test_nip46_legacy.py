"""NIP-04 fallback against a real legacy signer: nostr-sdk 0.37.0's NostrConnectRemoteSigner,
which speaks only the old NIP-04 transport.  It needs its own venv (0.37 and 0.45 cannot
share one): scripts/setup.sh makes .venv-legacy; NOSTR_SDK_LEGACY_PYTHON names another.
"""

from __future__ import annotations

import asyncio
import os

from nostr_browserd.login.bunker import BunkerSigner
from nostr_browserd.nostr.nip01 import verify_event
from nostr_browserd.nostr.signer import KeySigner
from tests.fixtures.leaks import LEAKS
from tests.fixtures.paths import REPO
from tests.fixtures.required import missing

ROOT = REPO
LEGACY_PYTHON = os.environ.get("NOSTR_SDK_LEGACY_PYTHON", str(ROOT / ".venv-legacy/bin/python"))

LEAKS.secret("legacy-secret", "the legacy signer's pairing secret")
LEGACY_SIGNER = """
import asyncio, sys
import nostr_sdk as ns

class Approve(ns.NostrConnectSignerActions):
    def approve(self, req):
        return True

async def main():
    keys = ns.Keys.parse(sys.argv[2])
    signer = ns.NostrConnectRemoteSigner(ns.NostrConnectKeys(signer=keys, user=keys),
                                         [sys.argv[1]], sys.argv[3])
    print(str(signer.bunker_uri()), flush=True)
    await signer.serve(Approve())

asyncio.run(main())
"""


async def test_our_client_falls_back_to_nip04_for_a_legacy_signer(local_relay_factory) -> None:
    if not os.path.exists(LEGACY_PYTHON):
        missing("no nostr-sdk 0.37.0 venv: run scripts/setup.sh")
    relay = await local_relay_factory()
    user = KeySigner.generate()
    proc = await asyncio.create_subprocess_exec(
        LEGACY_PYTHON,
        "-c",
        LEGACY_SIGNER,
        relay.url,
        user.secret.hex(),
        "legacy-secret",
        stdout=asyncio.subprocess.PIPE,
    )
    try:
        assert proc.stdout is not None
        url = (await asyncio.wait_for(proc.stdout.readline(), 20)).decode().strip()
        signer = await BunkerSigner.connect(url, timeout=5, connect_timeout=1)
        try:
            assert signer.describe()["transport"] == "nip04"
            assert await signer.public_key() == user.pubkey
            verify_event(await signer.sign_event({"kind": 1, "content": "old signer"}))
            peer = KeySigner.generate()
            ct = await signer.nip44_encrypt(peer.pubkey, "n44")
            assert await peer.nip44_decrypt(user.pubkey, ct) == "n44"
            ct = await signer.nip04_encrypt(peer.pubkey, "n04")
            assert await peer.nip04_decrypt(user.pubkey, ct) == "n04"
        finally:
            await signer.aclose()
    finally:
        proc.kill()
        await proc.wait()
