"""NIP-06: mnemonic → key, against the spec's vectors; errors never contain the words."""

from __future__ import annotations

import json

import pytest

from nostr_browserd.nostr import nip06, nip19
from nostr_browserd.nostr.keys import public_key_hex
from nostr_browserd.nostr.nip06 import MnemonicError
from tests.fixtures.paths import TESTS

KEYS = json.loads((TESTS / "vectors" / "keys.json").read_text())


@pytest.mark.parametrize("v", KEYS["nip06"])
def test_vectors(v: dict) -> None:
    sk = nip06.secret_from_mnemonic(v["mnemonic"])
    assert sk.hex() == v["private_key"]
    assert public_key_hex(sk) == v["public_key"]
    assert nip19.nsec_encode(sk) == v["nsec"]
    assert nip19.npub_encode(public_key_hex(sk)) == v["npub"]
    # Extra whitespace and case do not matter.
    assert nip06.secret_from_mnemonic("  " + v["mnemonic"].upper().replace(" ", "  ")) == sk


def test_passphrase_and_account_change_the_key() -> None:
    m = KEYS["nip06"][0]["mnemonic"]
    base = nip06.secret_from_mnemonic(m)
    assert nip06.secret_from_mnemonic(m, passphrase="x") != base
    assert nip06.secret_from_mnemonic(m, account=1) != base


def test_misspelt_word_position_only() -> None:
    words = KEYS["nip06"][0]["mnemonic"].split()
    words[4] = "guidx"
    with pytest.raises(MnemonicError) as exc:
        nip06.validate_mnemonic(" ".join(words))
    msg = str(exc.value)
    assert "word 5" in msg
    for w in words:
        assert w not in msg.split()
    assert "guidx" not in msg


def test_bad_checksum() -> None:
    words = KEYS["nip06"][0]["mnemonic"].split()
    words[0], words[1] = words[1], words[0]
    with pytest.raises(MnemonicError, match="checksum") as exc:
        nip06.secret_from_mnemonic(" ".join(words))
    assert not any(w in str(exc.value).split() for w in words)


def test_wrong_word_count() -> None:
    with pytest.raises(MnemonicError, match="12, 15"):
        nip06.validate_mnemonic("abandon " * 11)


def test_generate() -> None:
    m = nip06.generate_mnemonic()
    assert len(m.split()) == 12
    nip06.validate_mnemonic(m)
    assert len(nip06.generate_mnemonic(256).split()) == 24
    assert len(nip06.secret_from_mnemonic(m)) == 32
