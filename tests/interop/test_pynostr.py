"""Cross-implementation: pynostr 0.7 agrees with us on event ids, signatures, NIP-04, NIP-19."""

from __future__ import annotations

import pytest
from pynostr.event import Event as PyEvent
from pynostr.key import PrivateKey as PyPrivateKey

from nostr_browserd.nostr import nip04, nip19
from nostr_browserd.nostr.keys import generate_secret, public_key_hex
from nostr_browserd.nostr.nip01 import event_id, finalize_event, verify_event

TEXTS = ["", "hello", 'héllo 🌍 \n\t"q" \\ </script>', "y" * 3000]


@pytest.mark.parametrize("content", TEXTS)
def test_event_ids_agree(content: str) -> None:
    sk = generate_secret()
    tags = [["p", public_key_hex(generate_secret())], ["e", "ab" * 32, "wss://r"]]
    ours = finalize_event(
        {"kind": 4, "content": content, "tags": tags, "created_at": 1_700_000_000}, sk
    )
    theirs = PyEvent(
        content=content, pubkey=ours["pubkey"], created_at=1_700_000_000, kind=4, tags=tags
    )
    theirs.compute_id()  # sets .id
    assert theirs.id == ours["id"]
    # pynostr signs, we verify.
    pk = PyPrivateKey(sk)
    ev = PyEvent(content=content, pubkey=pk.public_key.hex(), kind=1, tags=tags)
    ev.sign(pk.hex())
    as_dict = ev.to_dict()
    verify_event(as_dict)
    assert (
        event_id(as_dict["pubkey"], as_dict["created_at"], 1, as_dict["tags"], as_dict["content"])
        == as_dict["id"]
    )
    # We sign, pynostr verifies.
    assert PyEvent.from_dict(ours).verify()


@pytest.mark.parametrize("text", [t for t in TEXTS if t])
def test_nip04_both_ways(text: str) -> None:
    a, b = generate_secret(), generate_secret()
    pa, pb = PyPrivateKey(a), PyPrivateKey(b)
    ours = nip04.encrypt(a, public_key_hex(b), text)
    assert pb.decrypt_message(ours, public_key_hex(a)) == text
    theirs = pa.encrypt_message(text, public_key_hex(b))
    assert nip04.decrypt(b, public_key_hex(a), theirs) == text


def test_bech32_agrees() -> None:
    sk = generate_secret()
    pk = PyPrivateKey(sk)
    assert pk.bech32() == nip19.nsec_encode(sk)
    assert pk.public_key.bech32() == nip19.npub_encode(public_key_hex(sk))
    assert nip19.decode_nsec(pk.bech32()) == sk
