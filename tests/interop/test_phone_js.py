"""The phone side as an independent implementation: nostr-tools (JavaScript, from npm, pinned in
tests/phone_js/package-lock.json) sends text commands to the daemon over NIP-17, unwraps the
kind 15 file message that answers ``screenshot`` and decrypts it with WebCrypto's AES-GCM,
checking ``x`` and ``ox`` as a chat app does.  Run with Debian's Node.js; scripts/setup.sh
installs the packages with ``npm ci``.  Without Node.js the test is skipped (under ``CI=true``
it fails); with Node.js but without the packages it fails.
"""

from __future__ import annotations

import asyncio
import json

from PIL import Image

from nostr_browserd.nostr.nip19 import npub_encode
from nostr_browserd.nostr.signer import KeySigner
from tests.fixtures.blossom import blossom_server_fixture  # noqa: F401
from tests.fixtures.daemon import daemon_pubkey, start_daemon_fixture  # noqa: F401
from tests.fixtures.leaks import LEAKS
from tests.fixtures.paths import TESTS

PHONE_DIR = TESTS / "phone_js"


async def test_a_phone_on_nostr_tools_sees_the_screenshot(
    node, nostr_relay_url, site_url, start_daemon, blossom_server, tmp_path
) -> None:
    assert (PHONE_DIR / "node_modules" / "nostr-tools").is_dir(), (
        "the JS phone is not installed: run scripts/setup.sh (npm ci in tests/phone_js)"
    )
    phone = KeySigner.generate()
    LEAKS.key(phone.secret.hex(), "the JS phone's key")
    daemon = await start_daemon(
        [nostr_relay_url],
        controllers=[npub_encode(phone.pubkey)],
        files={"blossom_servers": [blossom_server.url]},
    )
    picture = tmp_path / "screen.png"
    proc = await asyncio.create_subprocess_exec(
        node,
        "phone.mjs",
        nostr_relay_url,
        phone.secret.hex(),
        await daemon_pubkey(daemon),
        str(picture),
        f"open {site_url}/index.html",
        "screenshot",
        cwd=PHONE_DIR,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), 90)
    assert proc.returncode == 0, err.decode()
    seen = json.loads(out)
    opened, shot = seen["replies"]
    assert "Test site" in opened["text"]
    assert "sent as a file message" in shot["text"]
    assert seen["file"]["type"] == "image/png"
    assert seen["file"]["e"] == shot["e"], "the file cites the screenshot request"
    with Image.open(picture) as image:
        assert seen["file"]["dim"] == f"{image.width}x{image.height}"
        assert int(seen["file"]["size"]) == picture.stat().st_size
