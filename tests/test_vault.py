"""The vault's pure parts (origins, TOTP against RFC 6238) and its keeper on a real store."""

from __future__ import annotations

import base64
import json

import pytest

from nostr_browserd.daemon.store.sqlite import SqliteStore
from nostr_browserd.errors import BrowserdError, ErrorCode
from nostr_browserd.login.readonly import ReadOnlySigner
from nostr_browserd.nostr.keys import generate_secret, public_key_hex
from nostr_browserd.nostr.signer import KeySigner
from nostr_browserd.vault.entry import Entry, origin_of, parse_origins, totp_code
from nostr_browserd.vault.keeper import Vault
from tests.fixtures.leaks import LEAKS

PASSWORD = "vault-unit-pass-7Hq2"
USERNAME = "vault-unit-user"
TOTP = "JBSWY3DPEHPK3PXPJBSWY3DP"
for value, what in ((PASSWORD, "a vault password"), (USERNAME, "a vault username")):
    LEAKS.secret(value, what)
LEAKS.secret(TOTP, "a vault TOTP secret")

# RFC 6238, appendix B: the seeds are ASCII "1234567890" repeated to the hash's length.
SEEDS = {"SHA1": 20, "SHA256": 32, "SHA512": 64}
VECTORS = [
    (59, {"SHA1": "94287082", "SHA256": "46119246", "SHA512": "90693936"}),
    (1111111109, {"SHA1": "07081804", "SHA256": "68084774", "SHA512": "25091201"}),
    (1111111111, {"SHA1": "14050471", "SHA256": "67062674", "SHA512": "99943326"}),
    (1234567890, {"SHA1": "89005924", "SHA256": "91819424", "SHA512": "93441116"}),
    (2000000000, {"SHA1": "69279037", "SHA256": "90698825", "SHA512": "38618901"}),
    (20000000000, {"SHA1": "65353130", "SHA256": "77737706", "SHA512": "47863826"}),
]


def rfc_uri(algorithm: str) -> str:
    seed = (b"1234567890" * 7)[: SEEDS[algorithm]]
    secret = base64.b32encode(seed).decode().rstrip("=")
    return f"otpauth://totp/rfc6238?secret={secret}&digits=8&period=30&algorithm={algorithm}"


@pytest.mark.parametrize("at,codes", VECTORS)
def test_totp_codes_are_rfc_6238s_test_vectors(at, codes):
    for algorithm, code in codes.items():
        assert totp_code(rfc_uri(algorithm), at) == code, algorithm
    # A bare base32 secret is SHA-1, 6 digits, 30 s: the vector's last six digits.
    sha1 = rfc_uri("SHA1").split("secret=")[1].split("&")[0]
    assert totp_code(sha1.lower(), at) == codes["SHA1"][-6:]


def test_origins_are_scheme_host_and_port_exactly():
    assert origin_of("https://GitHub.com:443/login?next=/") == "https://github.com"
    assert origin_of("http://127.0.0.1:8080/a") == "http://127.0.0.1:8080"
    assert origin_of("https://github.com:8443/") == "https://github.com:8443"
    for none in ("about:blank", "data:text/html,x", "file:///etc/passwd", "github.com", ""):
        assert origin_of(none) is None, none
    assert parse_origins("https://a.example/x, https://b.example") == [
        "https://a.example",
        "https://b.example",
    ]
    with pytest.raises(BrowserdError, match="is not an origin"):
        parse_origins(["ftp://a.example"])


def test_a_bad_entry_is_refused_without_repeating_a_value():
    for bad in ({"totp": "not base32 at all!"}, {"totp": "otpauth://hotp/x?secret=JBSWY3DP"}):
        with pytest.raises(BrowserdError) as caught:
            Entry.checked("site", "https://a.example", USERNAME, PASSWORD, **bad)
        assert bad["totp"] not in caught.value.message and "TOTP" in caught.value.message
    with pytest.raises(BrowserdError, match="password is one line"):
        Entry.checked("site", "https://a.example", USERNAME, "")
    with pytest.raises(BrowserdError, match="name"):
        Entry.checked("../x", "https://a.example", USERNAME, PASSWORD)
    assert PASSWORD not in repr(Entry.checked("site", "https://a.example", USERNAME, PASSWORD))


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
