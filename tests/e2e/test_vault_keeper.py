"""The vault's keeper on a real SQLite store: sealed per owner, the seal decides, another
identity cannot open an entry and a read-only one cannot hold one."""

from __future__ import annotations

import json

import pytest

from nostr_browserd.daemon.store.sqlite import SqliteStore
from nostr_browserd.errors import BrowserdError, ErrorCode
from nostr_browserd.login.readonly import ReadOnlySigner
from nostr_browserd.nostr.keys import generate_secret, public_key_hex
from nostr_browserd.nostr.signer import KeySigner
from nostr_browserd.vault.entry import Entry
from nostr_browserd.vault.keeper import Vault
from tests.fixtures.leaks import LEAKS

PASSWORD = "vault-keeper-pass-7Hq2"
USERNAME = "vault-keeper-user"
TOTP = "JBSWY3DPEHPK3PXPJBSWY3DP"
LEAKS.secret(PASSWORD, "a vault password")
LEAKS.secret(USERNAME, "a vault username")
LEAKS.secret(TOTP, "a vault TOTP secret")


async def test_entries_are_sealed_per_owner_and_the_seal_is_what_counts(tmp_path):
    store = SqliteStore(tmp_path / "state.sqlite3")
    signer = KeySigner(generate_secret())
    vault = Vault(store, lambda: signer)
    entry = Entry.checked("site", ["https://a.example"], USERNAME, PASSWORD, TOTP)
    assert (await vault.add("alice", entry))["origins"] == ["https://a.example"]
    opened = await vault.open("alice", "site")
    assert (opened.username, opened.password, opened.totp) == (USERNAME, PASSWORD, TOTP)
    assert await vault.entries("alice") == [
        {"name": "site", "origins": ["https://a.example"], "totp": True, "usable": True}
    ]
    with pytest.raises(BrowserdError, match="no entry 'site'"):
        await vault.open("bob", "site")
    # An edited row widens nothing: the origins are the sealed ones.
    await store._execute("UPDATE vault SET origins = ?", (json.dumps(["https://evil.example"]),))
    assert (await vault.open("alice", "site")).origins == ["https://a.example"]
    # Nor does a row moved to another owner open for that owner.
    await store._execute("UPDATE vault SET owner = 'bob'")
    with pytest.raises(BrowserdError, match="cannot be opened") as caught:
        await vault.open("bob", "site")
    assert caught.value.code is ErrorCode.REFUSED
    await store.close()
    for path in tmp_path.iterdir():
        data = path.read_bytes()
        assert PASSWORD.encode() not in data and USERNAME.encode() not in data, path


async def test_another_identity_cannot_open_it_and_a_read_only_one_cannot_hold_one(tmp_path):
    store = SqliteStore(tmp_path / "state.sqlite3")
    signer: KeySigner | ReadOnlySigner = KeySigner(generate_secret())
    vault = Vault(store, lambda: signer)
    await vault.add("alice", Entry.checked("site", "https://a.example", USERNAME, PASSWORD))
    signer = KeySigner(generate_secret())  # the identity changed
    assert (await vault.entries("alice"))[0]["usable"] is False
    with pytest.raises(BrowserdError, match="cannot be opened by this identity"):
        await vault.open("alice", "site")
    signer = ReadOnlySigner(public_key_hex(generate_secret()))
    with pytest.raises(BrowserdError, match="read-only identity cannot encrypt") as caught:
        await vault.add("alice", Entry.checked("mail", "https://m.example", USERNAME, PASSWORD))
    assert caught.value.code is ErrorCode.READ_ONLY_IDENTITY
    assert "plaintext" in caught.value.message
    assert [e["name"] for e in await vault.entries("alice")] == ["site"]
    await store.close()
