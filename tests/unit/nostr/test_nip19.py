"""NIP-19: vectors from NIP-06/NIP-19 and strict, secret-safe decoding."""

from __future__ import annotations

import json

import pytest

from nostr_browserd.nostr import nip19
from nostr_browserd.nostr.nip19 import Bech32Error
from tests.fixtures.paths import TESTS

KEYS = json.loads((TESTS / "vectors" / "keys.json").read_text())


@pytest.mark.parametrize("v", KEYS["nip19"])
def test_nip19_vectors(v: dict) -> None:
    if "npub" in v:
        assert nip19.npub_encode(v["hex"]) == v["npub"]
        assert nip19.decode_npub(v["npub"]) == v["hex"]
        assert nip19.parse_pubkey(v["npub"]) == v["hex"]
        assert nip19.decode(v["npub"]) == ("npub", v["hex"])
    if "nsec" in v:
        assert nip19.nsec_encode(bytes.fromhex(v["hex"])) == v["nsec"]
        assert nip19.decode_nsec(v["nsec"]) == bytes.fromhex(v["hex"])
        assert nip19.parse_secret(v["nsec"]) == bytes.fromhex(v["hex"])
    if "nprofile" in v:
        assert nip19.decode_nprofile(v["nprofile"]) == (v["pubkey"], v["relays"])
        assert nip19.nprofile_encode(v["pubkey"], v["relays"]) == v["nprofile"]
        assert nip19.parse_pubkey(v["nprofile"]) == v["pubkey"]


@pytest.mark.parametrize("v", KEYS["nip06"])
def test_nip06_bech32(v: dict) -> None:
    assert nip19.nsec_encode(bytes.fromhex(v["private_key"])) == v["nsec"]
    assert nip19.npub_encode(v["public_key"]) == v["npub"]


def test_nsec_where_npub_expected_never_echoes() -> None:
    nsec = KEYS["nip19"][1]["nsec"]
    for fn in (nip19.decode_npub, nip19.parse_pubkey, nip19.decode_nprofile, nip19.decode_note):
        with pytest.raises(Bech32Error) as exc:
            fn(nsec)
        assert nsec not in str(exc.value)
        assert nsec[5:15] not in str(exc.value)
        assert KEYS["nip19"][1]["hex"] not in str(exc.value)
        assert "secret" in str(exc.value)


def test_npub_where_nsec_expected() -> None:
    with pytest.raises(Bech32Error, match="public key"):
        nip19.parse_secret(KEYS["nip19"][0]["npub"])
    with pytest.raises(Bech32Error):
        nip19.decode_nsec(KEYS["nip19"][0]["npub"])


def test_bad_checksum_and_case() -> None:
    npub = KEYS["nip19"][0]["npub"]
    typo = npub[:-1] + ("q" if npub[-1] != "q" else "p")
    with pytest.raises(Bech32Error, match="checksum"):
        nip19.decode_npub(typo)
    assert nip19.decode_npub(npub.upper()) == KEYS["nip19"][0]["hex"]
    with pytest.raises(Bech32Error, match="case"):
        nip19.decode_npub(npub[:10] + npub[10:].upper())


def test_nostr_uri_prefix_and_hex() -> None:
    v = KEYS["nip19"][0]
    assert nip19.parse_pubkey("nostr:" + v["npub"]) == v["hex"]
    assert nip19.parse_pubkey(v["hex"].upper()) == v["hex"]
    assert nip19.parse_secret(KEYS["nip19"][1]["hex"]) == bytes.fromhex(KEYS["nip19"][1]["hex"])


def test_parse_pubkey_rejects_off_curve() -> None:
    with pytest.raises(Bech32Error, match="secp256k1"):
        nip19.parse_pubkey("00" * 32)
    with pytest.raises(Bech32Error):
        nip19.parse_secret("00" * 32)


def test_nevent_round_trip() -> None:
    eid, author = "ab" * 32, KEYS["nip19"][0]["hex"]
    s = nip19.nevent_encode(eid, ["wss://r.example"], author=author, kind=1059)
    assert nip19.decode_nevent(s) == {
        "id": eid,
        "relays": ["wss://r.example"],
        "author": author,
        "kind": 1059,
    }
    assert nip19.decode_nevent(nip19.nevent_encode(eid)) == {
        "id": eid,
        "relays": [],
        "author": None,
        "kind": None,
    }
    note = nip19.note_encode(eid)
    assert nip19.decode_note(note) == eid


def test_naddr_round_trip() -> None:
    pk = KEYS["nip19"][0]["hex"]
    s = nip19.naddr_encode("my-list", pk, 30000, ["wss://r"])
    assert nip19.decode_naddr(s) == {
        "identifier": "my-list",
        "pubkey": pk,
        "kind": 30000,
        "relays": ["wss://r"],
    }


@pytest.mark.parametrize(
    "junk", ["", "npub", "npub1", "npub1qqqqqq", "x" * 6000, "npub1\x00abc", "1qqqqqqqq", "hello"]
)
def test_garbage(junk: str) -> None:
    with pytest.raises(Bech32Error):
        nip19.decode_npub(junk)
    with pytest.raises(Bech32Error):
        nip19.decode(junk)
