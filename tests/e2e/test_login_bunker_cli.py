"""``nostr-browserd bunker`` as a process: prints its bunker:// URL, serves, stops on SIGINT."""

from __future__ import annotations

import asyncio
import signal
import sys

import pytest

from nostr_browserd.errors import BrowserdError
from nostr_browserd.login.bunker import BunkerSigner
from nostr_browserd.login.files import read_private_file
from nostr_browserd.nostr.nip01 import verify_event
from nostr_browserd.nostr.nip19 import nsec_encode
from nostr_browserd.nostr.signer import KeySigner
from tests.fixtures.signers import NIP06, private_file

ENTRY = "import sys; from nostr_browserd.cli.bunker import main; sys.exit(main(sys.argv[1:]))"


async def run_bunker(*args: str, background: bool = False) -> asyncio.subprocess.Process:
    """``background``: started as a shell's background job is, with SIGINT ignored."""
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        ENTRY,
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        preexec_fn=(lambda: signal.signal(signal.SIGINT, signal.SIG_IGN)) if background else None,
    )


async def test_cli_serves_a_key_file(tmp_path, local_relay_factory) -> None:
    relay = await local_relay_factory()
    key = KeySigner.generate()
    key_file = private_file(tmp_path, "key", nsec_encode(key.secret))
    proc = await run_bunker("--relay", relay.url, "--nsec-file", str(key_file))
    try:
        assert proc.stdout is not None
        url = (await asyncio.wait_for(proc.stdout.readline(), 20)).decode().strip()
        assert url.startswith(f"bunker://{key.pubkey}?relay=")
        signer = await BunkerSigner.connect(url, timeout=5)
        try:
            assert await signer.public_key() == key.pubkey
            verify_event(await signer.sign_event({"kind": 13, "content": "a seal"}))
            # By default it signs only the kinds a nostr-browserd needs, and refuses the rest.
            with pytest.raises(BrowserdError) as refused:
                await signer.sign_event({"kind": 1, "content": "a public note"})
            assert "not permitted" in refused.value.message
        finally:
            await signer.aclose()
    finally:
        proc.send_signal(signal.SIGINT)
        _, err = await asyncio.wait_for(proc.communicate(), 20)
    assert proc.returncode == 0
    assert nsec_encode(key.secret) not in err.decode() and url not in err.decode()


async def test_cli_serves_a_seed_with_a_separate_transport_key(tmp_path, local_relay_factory):
    relay = await local_relay_factory()
    seed = private_file(tmp_path, "seed", NIP06[0]["mnemonic"])
    proc = await run_bunker(
        "--relay",
        relay.url,
        "--seed-file",
        str(seed),
        "--separate-transport-key",
        "--perms",
        "sign_event:1",
    )
    try:
        assert proc.stdout is not None
        url = (await asyncio.wait_for(proc.stdout.readline(), 20)).decode().strip()
        assert NIP06[0]["public_key"] not in url
        signer = await BunkerSigner.connect(url, timeout=5)
        try:
            assert await signer.public_key() == NIP06[0]["public_key"]
        finally:
            await signer.aclose()
    finally:
        proc.send_signal(signal.SIGINT)
        await asyncio.wait_for(proc.communicate(), 20)


async def test_cli_writes_a_reusable_url_file_for_several_workers(tmp_path, local_relay_factory):
    """The reference deployment: the workers read the bunker:// URL from the file it writes."""
    relay = await local_relay_factory()
    key = KeySigner.generate()
    key_file = private_file(tmp_path, "key", nsec_encode(key.secret))
    secret_file = private_file(tmp_path, "secret", "shared-pairing-secret")
    url_file = tmp_path / "url"
    proc = await run_bunker(
        "--relay",
        relay.url,
        "--nsec-file",
        str(key_file),
        "--secret-file",
        str(secret_file),
        "--reusable-secret",
        "--url-file",
        str(url_file),
    )
    try:
        assert proc.stdout is not None
        said = (await asyncio.wait_for(proc.stdout.readline(), 20)).decode().strip()
        assert said == f"the bunker:// URL is in {url_file}"
        url = read_private_file(url_file)
        assert url.startswith(f"bunker://{key.pubkey}?") and "secret=shared-pairing-secret" in url
        for _ in range(2):  # a second worker pairs with the same URL
            signer = await BunkerSigner.connect(url, timeout=5)
            try:
                verify_event(await signer.sign_event({"kind": 13, "content": "a seal"}))
            finally:
                await signer.aclose()
    finally:
        proc.send_signal(signal.SIGINT)
        out, err = await asyncio.wait_for(proc.communicate(), 20)
    assert proc.returncode == 0 and b"shared-pairing-secret" not in out + err


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT], ids=lambda s: s.name)
async def test_cli_stops_cleanly_on_sigterm_and_on_sigint_in_the_background(
    tmp_path, local_relay_factory, stop
) -> None:
    """systemd stops it with SIGTERM; a shell's background job (or CI's) has SIGINT ignored
    from its start, and Ctrl-C's signal must stop it all the same: exit 0, relays closed."""
    relay = await local_relay_factory()
    key_file = private_file(tmp_path, "key", nsec_encode(KeySigner.generate().secret))
    proc = await run_bunker("--relay", relay.url, "--nsec-file", str(key_file), background=True)
    assert proc.stdout is not None
    await asyncio.wait_for(proc.stdout.readline(), 20)
    proc.send_signal(stop)
    try:
        await asyncio.wait_for(proc.communicate(), 20)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert proc.returncode == 0


async def test_cli_refuses_a_readable_key_file(tmp_path) -> None:
    key_file = private_file(tmp_path, "key", NIP06[0]["nsec"], 0o640)
    proc = await run_bunker("--relay", "ws://127.0.0.1:9", "--nsec-file", str(key_file))
    out, err = await asyncio.wait_for(proc.communicate(), 20)
    assert proc.returncode == 1 and out == b""
    assert f"chmod 600 {key_file}" in err.decode()


async def test_cli_usage_errors(tmp_path) -> None:
    proc = await run_bunker("--nsec-file", "x")
    _, err = await asyncio.wait_for(proc.communicate(), 20)
    assert proc.returncode == 2 and b"--relay" in err
