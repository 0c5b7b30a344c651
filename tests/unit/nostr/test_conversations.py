"""The conversation-key cache: each key computed once per (our key, their key), never another's."""

from __future__ import annotations

import pytest

from nostr_browserd.login.manager import IdentityManager
from nostr_browserd.nostr import conversations, nip44
from nostr_browserd.nostr.conversations import ConversationKeys
from nostr_browserd.nostr.keys import generate_secret, public_key_hex
from nostr_browserd.nostr.signer import KeySigner
from tests.fixtures.signers import NIP06

A, B = NIP06


@pytest.fixture
def computed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The peers whose conversation key was computed (not taken from the cache), in order."""
    calls: list[str] = []
    real = nip44.conversation_key

    def counting(seckey: bytes, pubkey: str) -> bytes:
        calls.append(pubkey)
        return real(seckey, pubkey)

    monkeypatch.setattr(conversations.nip44, "conversation_key", counting)
    return calls


def peer() -> str:
    return public_key_hex(generate_secret())


def test_a_key_is_computed_once_and_is_the_right_one(computed: list[str]) -> None:
    ours, theirs = generate_secret(), peer()
    cache = ConversationKeys(ours)
    keys = [cache.get(theirs) for _ in range(5)]
    assert computed == [theirs]
    assert keys == [nip44.conversation_key(ours, theirs)] * 5


def test_a_cached_key_belongs_to_our_key_too() -> None:
    theirs = peer()
    first, second = generate_secret(), generate_secret()
    one, two = ConversationKeys(first), ConversationKeys(second)
    assert one.get(theirs) == one.get(theirs) == nip44.conversation_key(first, theirs)
    assert two.get(theirs) == nip44.conversation_key(second, theirs) != one.get(theirs)


def test_one_time_keys_never_push_a_returning_peer_out(computed: list[str]) -> None:
    cache = ConversationKeys(generate_secret(), kept=4, probation=8)
    controller = peer()
    cache.get(controller)
    cache.get(controller)  # met again: kept
    for _ in range(100):  # a flood of gift wraps, each from a one-time key met once
        cache.get(peer())
    computed.clear()
    cache.get(controller)
    assert computed == []
    assert len(cache) == 1 + 8  # bounded: the kept peer and the last 8 one-time keys


def test_a_peer_met_once_is_forgotten_after_enough_others(computed: list[str]) -> None:
    cache = ConversationKeys(generate_secret(), kept=4, probation=2)
    first = peer()
    cache.get(first)
    cache.get(peer())
    cache.get(peer())
    computed.clear()
    cache.get(first)
    assert computed == [first]


async def test_logout_and_switch_forget_the_keys_of_the_identity_left() -> None:
    theirs = KeySigner.generate()
    manager = IdentityManager()
    await manager.login({"method": "local", "nsec": A["nsec"]})
    first = manager.signer
    assert isinstance(first, KeySigner)
    sealed = await theirs.nip44_encrypt(A["public_key"], "to A")
    assert await first.nip44_decrypt(theirs.pubkey, sealed) == "to A"
    assert theirs.pubkey in first._conversations

    await manager.switch_identity({"method": "local", "nsec": B["nsec"]})
    second = manager.signer
    assert theirs.pubkey not in first._conversations  # the identity left forgot it
    with pytest.raises(nip44.Nip44Error):  # and the next one does not answer with A's key
        await second.nip44_decrypt(theirs.pubkey, sealed)
    to_b = await theirs.nip44_encrypt(B["public_key"], "to B")
    assert await second.nip44_decrypt(theirs.pubkey, to_b) == "to B"

    await manager.logout()
    assert len(second._conversations) == 0
