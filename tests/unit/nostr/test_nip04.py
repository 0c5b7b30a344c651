"""NIP-04: AES-256-CBC with the unhashed ECDH x; strict payload parsing."""

from __future__ import annotations

import base64

import pytest

from nostr_browserd.nostr import nip04
from nostr_browserd.nostr.keys import generate_secret, public_key_hex
from nostr_browserd.nostr.nip04 import Nip04Error

A, B = generate_secret(), generate_secret()
PA, PB = public_key_hex(A), public_key_hex(B)


def test_round_trip_both_directions() -> None:
    for text in ("", "hello", "héllo 🌍", "x" * 10000):
        payload = nip04.encrypt(A, PB, text)
        assert "?iv=" in payload
        assert nip04.decrypt(B, PA, payload) == text
        assert nip04.decrypt(A, PB, payload) == text


def test_known_payload_with_fixed_iv() -> None:
    # Deterministic with a fixed iv: the iv is carried verbatim, ciphertext is 16 bytes.
    payload = nip04.encrypt(A, PB, "hi", iv=bytes(16))
    ct, iv = payload.split("?iv=")
    assert base64.b64decode(iv) == bytes(16) and len(base64.b64decode(ct)) == 16


def test_wrong_key_fails_cleanly() -> None:
    payload = nip04.encrypt(A, PB, "secret message that is long enough")
    with pytest.raises(Nip04Error):
        nip04.decrypt(generate_secret(), PA, payload)


@pytest.mark.parametrize(
    "payload",
    [
        "",
        "abc",
        "abc?iv=",
        "!!!?iv=AAAAAAAAAAAAAAAAAAAAAA==",
        "AAAA?iv=AAAAAAAAAAAAAAAAAAAAAA==",  # ciphertext not a multiple of 16
        base64.b64encode(bytes(16)).decode() + "?iv=AAAA",  # iv too short
        "A" * (nip04.MAX_PAYLOAD + 1),
    ],
)
def test_malformed_payloads(payload: str) -> None:
    with pytest.raises(Nip04Error):
        nip04.decrypt(B, PA, payload)


def test_invalid_pubkey() -> None:
    with pytest.raises(Nip04Error):
        nip04.encrypt(A, "00" * 32, "x")
