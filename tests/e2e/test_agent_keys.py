"""The API key store of ``ask``: NIP-44 to the daemon's key, systemd credentials, no plaintext."""

from __future__ import annotations

import json
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from nostr_browserd.agent.keys import KEYS_FILE, KeyStore
from nostr_browserd.errors import BrowserdError, ErrorCode
from nostr_browserd.login.readonly import ReadOnlySigner
from nostr_browserd.nostr.keys import generate_secret, public_key_hex
from nostr_browserd.nostr.nip19 import nsec_encode
from nostr_browserd.nostr.signer import KeySigner
from tests.fixtures.leaks import LEAKS

KEY = "sk-ant-api03-TESTKEY-abcdefghijklmnopqrstuvwxyz0123456789"
LEAKS.secret(KEY, "a model provider's API key")
CLI = [str(Path(sys.executable).with_name("nostr-browserd"))]
OTHER = "sk-or-v1-another-key-0123456789abcdef"
LEAKS.secret(OTHER, "a model provider's API key")


def plaintext_anywhere(directory: Path, secret: str) -> list[Path]:
    """Every file under ``directory`` whose bytes contain ``secret``."""
    return [p for p in directory.rglob("*") if p.is_file() and secret.encode() in p.read_bytes()]


async def test_nip44_backend_round_trip_one_provider_at_a_time(tmp_path):
    store = KeyStore(tmp_path, KeySigner(generate_secret()), credentials_dir=tmp_path / "none")
    assert (await store.status())["anthropic"] == "absent"
    await store.set("anthropic", KEY + "\n")
    await store.set("openrouter", OTHER)
    assert await store.get("anthropic") == KEY
    assert await store.get("openrouter") == OTHER
    assert await store.get("openai") is None
    status = await store.status()
    assert status["anthropic"].startswith("set (NIP-44")
    assert KEY not in json.dumps(status)
    path = tmp_path / KEYS_FILE
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert plaintext_anywhere(tmp_path, KEY) == [] and plaintext_anywhere(tmp_path, OTHER) == []
    assert store.clear("anthropic") == "removed"
    assert await store.get("anthropic") is None
    assert await store.get("openrouter") == OTHER  # the others stay
    assert store.clear("anthropic") == "no stored key"


async def test_a_copied_file_reads_as_absent_and_status_says_so(tmp_path):
    here, there = tmp_path / "here", tmp_path / "there"
    await KeyStore(here, KeySigner(generate_secret())).set("openai", KEY)
    there.mkdir()
    shutil.copy(here / KEYS_FILE, there / KEYS_FILE)
    elsewhere = KeyStore(there, KeySigner(generate_secret()))
    assert await elsewhere.get("openai") is None
    assert "cannot be decrypted" in (await elsewhere.status())["openai"]


async def test_an_entry_moved_to_another_provider_is_unusable(tmp_path):
    signer = KeySigner(generate_secret())
    store = KeyStore(tmp_path, signer)
    await store.set("openai", KEY)
    data = json.loads((tmp_path / KEYS_FILE).read_text())
    data["keys"]["anthropic"] = data["keys"]["openai"]
    (tmp_path / KEYS_FILE).write_text(json.dumps(data))
    assert await store.get("anthropic") is None
    assert await store.get("openai") == KEY


async def test_a_read_only_identity_refuses_set_and_says_why(tmp_path):
    store = KeyStore(tmp_path, ReadOnlySigner("a" * 63 + "1"))
    with pytest.raises(BrowserdError) as refused:
        await store.set("anthropic", KEY)
    assert refused.value.code == ErrorCode.READ_ONLY_IDENTITY
    assert "plaintext" in refused.value.message and "systemd credential" in refused.value.message
    assert not (tmp_path / KEYS_FILE).exists()


@pytest.mark.parametrize("bad", ["", "   ", "two words", "x" * 5000])
async def test_bad_keys_are_refused_and_nothing_is_stored(tmp_path, bad):
    store = KeyStore(tmp_path, KeySigner(generate_secret()))
    with pytest.raises(BrowserdError) as refused:
        await store.set("anthropic", bad)
    assert refused.value.code == ErrorCode.INVALID_PARAMS
    with pytest.raises(BrowserdError):
        await store.set("mistral", KEY)
    assert not (tmp_path / KEYS_FILE).exists()


def systemd_creds() -> str | None:
    """``systemd-creds`` when it can encrypt here (root, with a host key), else None."""
    tool = shutil.which("systemd-creds")
    if tool is None:
        return None
    probe = subprocess.run([tool, "encrypt", "-", "-"], input=b"x", capture_output=True)
    return tool if probe.returncode == 0 else None


@pytest.mark.skipif(systemd_creds() is None, reason="systemd-creds cannot encrypt here")
async def test_systemd_encrypted_credential_wins_and_is_read_only(tmp_path):
    """A real ``systemd-creds encrypt``; the decrypt into $CREDENTIALS_DIRECTORY is what
    systemd does for ``LoadCredentialEncrypted=`` when the service starts."""
    tool = systemd_creds()
    assert tool is not None
    sealed = tmp_path / "anthropic.cred"
    subprocess.run(
        [tool, "encrypt", "--name=anthropic-api-key", "-", str(sealed)],
        input=KEY.encode(),
        check=True,
        capture_output=True,
    )
    assert KEY.encode() not in sealed.read_bytes()
    credentials = tmp_path / "credentials"
    credentials.mkdir(mode=0o700)
    subprocess.run(
        [
            tool,
            "decrypt",
            "--name=anthropic-api-key",
            str(sealed),
            str(credentials / "anthropic-api-key"),
        ],
        check=True,
        capture_output=True,
    )
    state = tmp_path / "state"
    store = KeyStore(state, KeySigner(generate_secret()), credentials_dir=credentials)
    assert await store.get("anthropic") == KEY
    assert "systemd credential" in (await store.status())["anthropic"]
    await store.set("anthropic", OTHER)  # stored, but the credential still wins
    assert await store.get("anthropic") == KEY
    assert "read-only" in store.clear("anthropic")
    assert await store.get("anthropic") == KEY
    assert plaintext_anywhere(state, KEY) == []


def run_cli(args: list[str], stdin: str, config: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, "keys", "--config", str(config), *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_cli_reads_the_key_from_stdin_and_never_prints_it(tmp_path):
    nsec = tmp_path / "daemon.nsec"
    nsec.write_text(nsec_encode(generate_secret()))
    nsec.chmod(0o600)
    state = tmp_path / "state"
    config = tmp_path / "daemon.toml"
    config.write_text(
        f'[identity]\nnsec_file = "{nsec}"\n[state]\ndir = "{state}"\n[local]\nenabled = false\n'
    )
    done = run_cli(["set", "openai"], KEY + "\n", config)
    assert done.returncode == 0, done.stderr
    status = run_cli(["status"], "", config)
    assert "openai: set (NIP-44" in status.stdout and "anthropic: absent" in status.stdout
    for out in (done, status):
        assert KEY not in out.stdout + out.stderr
    assert plaintext_anywhere(state, KEY) == []
    assert run_cli(["clear", "openai"], "", config).returncode == 0
    assert "openai: absent" in run_cli(["status"], "", config).stdout
    readonly = tmp_path / "readonly.toml"
    npub = public_key_hex(generate_secret())
    readonly.write_text(
        f'[identity]\nmethod = "readonly"\nnpub = "{npub}"\n[state]\ndir = "{state}"\n'
        "[local]\nenabled = false\n"
    )
    refused = run_cli(["set", "openai"], KEY, readonly)
    assert refused.returncode == 1 and "read-only" in refused.stderr


async def test_through_a_bunker_the_key_is_read_only_while_the_signer_agrees(
    local_relay_factory, tmp_path
):
    from nostr_browserd.login.bunker import BunkerSigner
    from nostr_browserd.login.bunker_server import BunkerServer

    relay = await local_relay_factory()
    decision = {"now": "once"}

    async def operator(approval):
        return decision["now"]

    server = BunkerServer(KeySigner.generate(), [relay.url], perms=(), approver=operator)
    await server.start()
    signer = await BunkerSigner.connect(server.bunker_url, timeout=5.0)
    try:
        store = KeyStore(tmp_path, signer)
        await store.set("anthropic", KEY)
        assert await store.get("anthropic") == KEY
        decision["now"] = "deny"
        assert await store.get("anthropic") is None
        assert "did not decrypt" in (await store.status())["anthropic"]
        assert plaintext_anywhere(tmp_path, KEY) == []
    finally:
        await signer.aclose()
        await server.aclose()
