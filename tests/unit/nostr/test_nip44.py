"""NIP-44 v2 against every vector of paulmillr/nip44 (nip44.vectors.json), plus edge cases."""

from __future__ import annotations

import base64
import hashlib
import json

import pytest

from nostr_browserd.nostr import nip44
from nostr_browserd.nostr.keys import generate_secret, public_key_hex
from nostr_browserd.nostr.nip01 import MAX_FRAME
from nostr_browserd.nostr.nip44 import Nip44Error
from tests.fixtures.paths import TESTS

PATH = TESTS / "vectors" / "nip44.vectors.json"
V = json.loads(PATH.read_text())["v2"]
VALID, INVALID = V["valid"], V["invalid"]
EXTENDED = json.loads((TESTS / "vectors" / "nip44_extended.vectors.json").read_text())


def test_vector_file_checksum() -> None:
    # The checksum NIP-44 itself prints for the vector file.
    digest = hashlib.sha256(PATH.read_bytes()).hexdigest()
    assert digest == "269ed0f69e4c192512cc779e78c555090cebc7c785b609e338a62afc3ce25040"


def test_vector_counts() -> None:
    counts = {
        "get_conversation_key": len(VALID["get_conversation_key"]),
        "get_message_keys": len(VALID["get_message_keys"]["keys"]),
        "calc_padded_len": len(VALID["calc_padded_len"]),
        "encrypt_decrypt": len(VALID["encrypt_decrypt"]),
        "encrypt_decrypt_long_msg": len(VALID["encrypt_decrypt_long_msg"]),
    }
    assert sum(counts.values()) == 104, counts
    assert sum(len(v) for v in INVALID.values()) == 24


@pytest.mark.parametrize("v", VALID["get_conversation_key"])
def test_conversation_key(v: dict) -> None:
    key = nip44.conversation_key(bytes.fromhex(v["sec1"]), v["pub2"])
    assert key.hex() == v["conversation_key"]


@pytest.mark.parametrize("k", VALID["get_message_keys"]["keys"])
def test_message_keys(k: dict) -> None:
    conv = bytes.fromhex(VALID["get_message_keys"]["conversation_key"])
    chacha_key, chacha_nonce, hmac_key = nip44.message_keys(conv, bytes.fromhex(k["nonce"]))
    assert chacha_key.hex() == k["chacha_key"]
    assert chacha_nonce.hex() == k["chacha_nonce"]
    assert hmac_key.hex() == k["hmac_key"]


@pytest.mark.parametrize(("n", "padded"), VALID["calc_padded_len"])
def test_calc_padded_len(n: int, padded: int) -> None:
    assert nip44.calc_padded_len(n) == padded


@pytest.mark.parametrize("v", VALID["encrypt_decrypt"])
def test_encrypt_decrypt(v: dict) -> None:
    sec1, sec2 = bytes.fromhex(v["sec1"]), bytes.fromhex(v["sec2"])
    conv = nip44.conversation_key(sec1, public_key_hex(sec2))
    assert conv.hex() == v["conversation_key"]
    assert nip44.conversation_key(sec2, public_key_hex(sec1)) == conv
    payload = nip44.encrypt(v["plaintext"], conv, bytes.fromhex(v["nonce"]))
    assert payload == v["payload"]
    assert nip44.decrypt(v["payload"], conv) == v["plaintext"]


@pytest.mark.parametrize("v", VALID["encrypt_decrypt_long_msg"])
def test_long_messages(v: dict) -> None:
    plaintext = v["pattern"] * v["repeat"]
    assert hashlib.sha256(plaintext.encode()).hexdigest() == v["plaintext_sha256"]
    conv = bytes.fromhex(v["conversation_key"])
    payload = nip44.encrypt(plaintext, conv, bytes.fromhex(v["nonce"]))
    assert hashlib.sha256(payload.encode()).hexdigest() == v["payload_sha256"]
    assert nip44.decrypt(payload, conv) == plaintext


@pytest.mark.parametrize("length", INVALID["encrypt_msg_lengths"])
def test_invalid_message_lengths(length: int) -> None:
    conv = bytes(32)
    with pytest.raises(Nip44Error):
        nip44.encrypt("a" * length, conv)


@pytest.mark.parametrize("v", INVALID["get_conversation_key"], ids=lambda v: v["note"])
def test_invalid_conversation_key(v: dict) -> None:
    with pytest.raises(Nip44Error):
        nip44.conversation_key(bytes.fromhex(v["sec1"]), v["pub2"])


@pytest.mark.parametrize("v", INVALID["decrypt"], ids=lambda v: v["note"])
def test_invalid_decrypt(v: dict) -> None:
    with pytest.raises(Nip44Error) as exc:
        nip44.decrypt(v["payload"], bytes.fromhex(v["conversation_key"]))
    # The reason names the class of failure the vector documents.
    word = {"unknown": "version", "invalid base64": "base64", "invalid MAC": "MAC"}
    for prefix, expected in word.items():
        if v["note"].startswith(prefix):
            assert expected in str(exc.value)
    if v["note"].startswith("invalid padding"):
        assert "padding" in str(exc.value)
    if v["note"].startswith("invalid payload length"):
        assert "length" in str(exc.value) or "empty" in str(exc.value)


def test_round_trip_unicode_and_tamper() -> None:
    a, b = generate_secret(), generate_secret()
    conv = nip44.conversation_key(a, public_key_hex(b))
    text = "héllo 🌍 " * 100
    payload = nip44.encrypt(text, conv)
    assert nip44.decrypt(payload, nip44.conversation_key(b, public_key_hex(a))) == text
    raw = bytearray(base64.b64decode(payload))
    raw[40] ^= 1
    with pytest.raises(Nip44Error, match="MAC"):
        nip44.decrypt(base64.b64encode(raw).decode(), conv)
    with pytest.raises(Nip44Error, match="MAC"):
        nip44.decrypt(payload, nip44.conversation_key(a, public_key_hex(generate_secret())))
    with pytest.raises(Nip44Error):
        nip44.encrypt("\ud800", conv)


def test_nonce_is_random() -> None:
    conv = bytes(range(32))
    assert nip44.encrypt("x", conv) != nip44.encrypt("x", conv)


def test_pad_unpad() -> None:
    for n in (1, 31, 32, 33, 257, 65535):
        text = "a" * n
        padded = nip44.pad(text)
        assert len(padded) == 2 + nip44.calc_padded_len(n)
        assert nip44.unpad(padded) == text
    with pytest.raises(Nip44Error):
        nip44.unpad(b"\x00\x01a" + bytes(30) + b"\x01")


@pytest.mark.parametrize("v", EXTENDED["vectors"], ids=lambda v: str(v["plaintext_len"]))
def test_extended_length_vectors(v: dict) -> None:
    # NIP-44's own vectors across the u16 / extended-prefix boundary.
    conv, nonce = bytes.fromhex(EXTENDED["conversation_key"]), bytes.fromhex(EXTENDED["nonce"])
    text = "a" * v["plaintext_len"]
    assert hashlib.sha256(text.encode()).hexdigest() == v["plaintext_sha256"]
    padded = nip44.pad(text, extended=True)
    assert len(padded) == v["prefix"] + v["padded_len"]
    payload = nip44.encrypt(text, conv, nonce, extended=True)
    assert hashlib.sha256(payload.encode()).hexdigest() == v["payload_sha256"]
    assert nip44.decrypt(payload, conv) == text


def test_we_send_no_extended_prefix_unless_asked() -> None:
    # Older clients read a u16 prefix only: the daemon's own messages stay within it.
    conv = bytes(range(32))
    assert len(base64.b64decode(nip44.encrypt("a" * 65535, conv))) == 1 + 32 + 2 + 65536 + 32
    with pytest.raises(Nip44Error, match="65535"):
        nip44.encrypt("a" * 65536, conv)


def test_an_extended_payload_is_read_up_to_a_relay_frame() -> None:
    conv = bytes(range(32))
    text = "é" * 300_000  # 600,000 bytes of UTF-8: a 6-byte prefix
    payload = nip44.encrypt(text, conv, extended=True)
    assert len(payload) < MAX_FRAME and nip44.decrypt(payload, conv) == text
    with pytest.raises(Nip44Error, match="length"):  # longer than any frame: never decoded
        nip44.decrypt("A" * (MAX_FRAME + 4), conv)


def test_an_extended_prefix_must_hold_a_length_the_u16_cannot() -> None:
    # 00 00 then a u32 below 65,536: the short form exists, so this one is malformed.
    text = b"a" * 100
    padded = bytes(2) + len(text).to_bytes(4, "big") + text
    padded += bytes(nip44.calc_padded_len(len(text)) - len(text))
    with pytest.raises(Nip44Error, match="padding"):
        nip44.unpad(padded)
    with pytest.raises(Nip44Error, match="padding"):
        nip44.unpad(bytes(4))  # a zero u16 and no room for the u32
