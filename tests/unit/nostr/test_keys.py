"""keys.py: BIP-340 (all 15 official rows), x-only keys, unhashed ECDH, KeySigner."""

from __future__ import annotations

import csv
import pickle
from pathlib import Path

import pytest
from coincurve import PrivateKey

from nostr_browserd.nostr import keys
from nostr_browserd.nostr.keys import (
    generate_secret,
    public_key_hex,
    schnorr_sign,
    schnorr_verify,
    shared_x,
)
from nostr_browserd.nostr.signer import KeySigner, Signer
from tests.fixtures.paths import TESTS

VECTORS = TESTS / "vectors"


def _bip340_rows() -> list[dict[str, str]]:
    with open(VECTORS / "bip340.csv", newline="") as f:
        return list(csv.DictReader(f))


def test_bip340_has_15_rows() -> None:
    assert len(_bip340_rows()) == 15


@pytest.mark.parametrize("row", _bip340_rows(), ids=lambda r: f"row{r['index']}")
def test_bip340_vector(row: dict[str, str]) -> None:
    msg = bytes.fromhex(row["message"])
    pub = row["public key"].lower()
    sig = row["signature"].lower()
    expected = row["verification result"] == "TRUE"
    if row["secret key"]:
        sk = bytes.fromhex(row["secret key"])
        assert public_key_hex(sk) == pub
        assert schnorr_sign(msg, sk, bytes.fromhex(row["aux_rand"])) == sig
    assert schnorr_verify(msg, sig, pub) is expected


def test_generate_secret_is_valid_and_fresh() -> None:
    a, b = generate_secret(), generate_secret()
    assert len(a) == 32 and a != b
    assert keys.is_valid_secret(a)
    assert len(public_key_hex(a)) == 64


@pytest.mark.parametrize("bad", [b"", b"\x00" * 32, b"\xff" * 32, b"\x01" * 31, "00" * 32, None])
def test_invalid_secret_rejected_without_echo(bad: object) -> None:
    with pytest.raises(ValueError) as exc:
        public_key_hex(bad)  # type: ignore[arg-type]
    assert "ff" * 4 not in str(exc.value)


def test_shared_x_is_symmetric_and_unhashed() -> None:
    a, b = generate_secret(), generate_secret()
    x1 = shared_x(a, public_key_hex(b))
    x2 = shared_x(b, public_key_hex(a))
    assert x1 == x2 and len(x1) == 32
    # Same as the x coordinate of b·A computed by hand with coincurve.
    point = PrivateKey(a).public_key.multiply(b)
    assert point.format()[1:] == x1


@pytest.mark.parametrize(
    "bad_pub",
    [
        "",
        "zz" * 32,
        "00" * 32,  # x = 0 is not on the curve
        "ff" * 32,  # x >= p
        "ab" * 31,
        "AB" * 32,  # uppercase is not canonical
    ],
)
def test_shared_x_rejects_invalid_pubkeys(bad_pub: str) -> None:
    with pytest.raises(ValueError):
        shared_x(generate_secret(), bad_pub)


def test_schnorr_verify_never_raises_on_garbage() -> None:
    msg = b"\x00" * 32
    for sig, pub in [("", ""), ("zz" * 64, "00" * 32), ("00" * 64, "zz" * 32), (None, None)]:
        assert schnorr_verify(msg, sig, pub) is False  # type: ignore[arg-type]
    assert schnorr_verify(b"short", "00" * 64, "00" * 32) is False


async def test_key_signer_protocol_and_repr() -> None:
    sk = generate_secret()
    signer = KeySigner(sk)
    assert isinstance(signer, Signer)
    assert await signer.public_key() == public_key_hex(sk)
    assert sk.hex() not in repr(signer) and sk.hex() not in str(signer)
    with pytest.raises(TypeError):
        pickle.dumps(signer)
    ev = await signer.sign_event({"kind": 1, "content": "hi", "tags": [], "created_at": 1})
    from nostr_browserd.nostr.nip01 import verify_event

    verify_event(ev)
    other = KeySigner.generate()
    ct = await signer.nip44_encrypt(other.pubkey, "hello")
    assert await other.nip44_decrypt(signer.pubkey, ct) == "hello"
    ct4 = await signer.nip04_encrypt(other.pubkey, "hello4")
    assert await other.nip04_decrypt(signer.pubkey, ct4) == "hello4"


def test_keys_is_a_leaf() -> None:
    """Issue 10 §6: keys.py imports nothing from the package (KeySigner is in signer.py)."""
    import ast

    from nostr_browserd.nostr import keys

    tree = ast.parse(Path(keys.__file__).read_text())
    relative = [n for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.level > 0]
    package = [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.ImportFrom) and (n.module or "").startswith("nostr_browserd")
    ]
    assert not relative and not package
