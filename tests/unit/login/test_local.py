"""Local logins: nsec (string, file, env, systemd credential), seed (NIP-06), read-only."""

from __future__ import annotations

import pytest

from nostr_browserd.errors import BrowserdError, ErrorCode
from nostr_browserd.login.nsec import (
    signer_from_credential,
    signer_from_env,
    signer_from_file,
    signer_from_nsec,
)
from nostr_browserd.login.readonly import ReadOnlySigner
from nostr_browserd.login.seed import signer_from_mnemonic, signer_from_seed_file
from nostr_browserd.nostr.nip01 import verify_event
from tests.fixtures.signers import NIP06, VECTORS, private_file

NSEC_VECTOR = VECTORS["nip19"][1]
KEY = NIP06[0]


async def test_nsec_hex_and_bech32_give_the_same_key() -> None:
    a = signer_from_nsec(KEY["nsec"])
    b = signer_from_nsec(KEY["private_key"])
    assert await a.public_key() == await b.public_key() == KEY["public_key"]
    assert signer_from_nsec(NSEC_VECTOR["nsec"]).secret.hex() == NSEC_VECTOR["hex"]


@pytest.mark.parametrize("bad", ["", "nsec1qqqq", "zz" * 32, KEY["npub"], "00" * 32])
def test_bad_nsec_is_refused_without_echo(bad: str) -> None:
    with pytest.raises(BrowserdError) as err:
        signer_from_nsec(bad)
    assert err.value.code is ErrorCode.INVALID_PARAMS
    if bad:
        assert bad not in err.value.message


async def test_key_file_0600_is_read(tmp_path) -> None:
    path = private_file(tmp_path, "key", KEY["nsec"])
    assert await signer_from_file(path).public_key() == KEY["public_key"]


@pytest.mark.parametrize("mode", [0o640, 0o604, 0o644, 0o660, 0o610])
def test_key_file_open_to_group_or_others_is_refused(tmp_path, mode: int) -> None:
    path = private_file(tmp_path, "key", KEY["nsec"], mode)
    with pytest.raises(BrowserdError) as err:
        signer_from_file(path)
    assert err.value.code is ErrorCode.INVALID_PARAMS
    assert f"chmod 600 {path}" in err.value.message
    assert f"{mode:04o}" in err.value.message
    assert KEY["nsec"] not in err.value.message


def test_missing_key_file_and_directory_say_so(tmp_path) -> None:
    with pytest.raises(BrowserdError, match="does not exist"):
        signer_from_file(tmp_path / "nope")
    with pytest.raises(BrowserdError, match="not a regular file"):
        signer_from_file(tmp_path)


def test_key_file_with_garbage_names_the_file_not_the_content(tmp_path) -> None:
    path = private_file(tmp_path, "key", "hunter2-not-a-key")
    with pytest.raises(BrowserdError) as err:
        signer_from_file(path)
    assert str(path) in err.value.message and "hunter2" not in err.value.message


async def test_env_variable(monkeypatch) -> None:
    monkeypatch.setenv("BROWSERD_TEST_NSEC", KEY["private_key"])
    assert await signer_from_env("BROWSERD_TEST_NSEC").public_key() == KEY["public_key"]
    monkeypatch.delenv("BROWSERD_TEST_NSEC")
    with pytest.raises(BrowserdError, match="BROWSERD_TEST_NSEC is not set"):
        signer_from_env("BROWSERD_TEST_NSEC")


async def test_systemd_credential(tmp_path, monkeypatch) -> None:
    private_file(tmp_path, "nostr-key", KEY["nsec"], 0o400)
    monkeypatch.setenv("CREDENTIALS_DIRECTORY", str(tmp_path))
    assert await signer_from_credential("nostr-key").public_key() == KEY["public_key"]
    with pytest.raises(BrowserdError, match="plain file name"):
        signer_from_credential("../nostr-key")
    monkeypatch.delenv("CREDENTIALS_DIRECTORY")
    with pytest.raises(BrowserdError, match="LoadCredential=nostr-key:"):
        signer_from_credential("nostr-key")


@pytest.mark.parametrize("vector", NIP06, ids=["12-words", "24-words"])
async def test_nip06_vectors(vector) -> None:
    signer = signer_from_mnemonic(vector["mnemonic"])
    assert signer.secret.hex() == vector["private_key"]
    assert await signer.public_key() == vector["public_key"]


async def test_passphrase_and_account_change_the_key() -> None:
    words = KEY["mnemonic"]
    keys = {
        await signer_from_mnemonic(words).public_key(),
        await signer_from_mnemonic(words, "TREZOR").public_key(),
        await signer_from_mnemonic(words, account=1).public_key(),
    }
    assert len(keys) == 3


def test_misspelt_word_is_named_by_position_only() -> None:
    words = KEY["mnemonic"].split()
    words[4] = "guidee"
    with pytest.raises(BrowserdError) as err:
        signer_from_mnemonic(" ".join(words))
    assert err.value.code is ErrorCode.INVALID_PARAMS
    assert "word 5" in err.value.message
    assert not any(w in err.value.message for w in words)


def test_bad_checksum_and_account_are_refused() -> None:
    words = KEY["mnemonic"].split()
    words[0], words[1] = words[1], words[0]
    with pytest.raises(BrowserdError, match="checksum"):
        signer_from_mnemonic(" ".join(words))
    with pytest.raises(BrowserdError, match="account"):
        signer_from_mnemonic(KEY["mnemonic"], account=-1)


async def test_seed_file_and_passphrase_file(tmp_path) -> None:
    seed = private_file(tmp_path, "seed", KEY["mnemonic"])
    phrase = private_file(tmp_path, "phrase", " spaced passphrase ")
    from_files = signer_from_seed_file(seed, passphrase_file=phrase, account=2)
    inline = signer_from_mnemonic(KEY["mnemonic"], " spaced passphrase ", 2)
    assert await from_files.public_key() == await inline.public_key()
    seed.chmod(0o644)
    with pytest.raises(BrowserdError, match="chmod 600"):
        signer_from_seed_file(seed)


async def test_signing_with_a_seed_key_verifies() -> None:
    signer = signer_from_mnemonic(KEY["mnemonic"])
    event = await signer.sign_event({"kind": 1, "content": "hello", "tags": []})
    verify_event(event)
    assert event["pubkey"] == KEY["public_key"]


async def test_readonly_knows_its_key_and_refuses_everything_else() -> None:
    signer = ReadOnlySigner(KEY["npub"])
    assert await signer.public_key() == KEY["public_key"]
    assert await ReadOnlySigner(KEY["public_key"].upper()).public_key() == KEY["public_key"]
    peer = NIP06[1]["public_key"]
    calls = [
        signer.sign_event({"kind": 1, "content": "x"}),
        signer.nip04_encrypt(peer, "x"),
        signer.nip04_decrypt(peer, "x?iv=y"),
        signer.nip44_encrypt(peer, "x"),
        signer.nip44_decrypt(peer, "x"),
    ]
    for call in calls:
        with pytest.raises(BrowserdError) as err:
            await call
        assert err.value.code is ErrorCode.READ_ONLY_IDENTITY
        assert "read-only" in err.value.message and "direct messages" in err.value.message


def test_readonly_refuses_an_nsec_without_echo() -> None:
    with pytest.raises(BrowserdError) as err:
        ReadOnlySigner(KEY["nsec"])
    assert err.value.code is ErrorCode.INVALID_PARAMS
    assert KEY["nsec"] not in err.value.message
