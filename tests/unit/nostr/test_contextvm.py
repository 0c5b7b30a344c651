"""ContextVM's wire (nostr/contextvm.py): CEP-4 wraps, the inner message's checks, CEP-22."""

from __future__ import annotations

import json

import pytest

from nostr_browserd.nostr import contextvm
from nostr_browserd.nostr.nip59 import GIFT_WRAP_KIND, UnwrapError
from nostr_browserd.nostr.signer import KeySigner


async def signed(author: KeySigner, to: str, content: str = "{}") -> dict:
    return await author.sign_event(contextvm.message_template(content, to))


@pytest.mark.parametrize("kind", contextvm.WRAP_KINDS)
async def test_a_wrap_opens_to_the_signed_message_for_its_recipient_only(kind) -> None:
    client, server, other = KeySigner.generate(), KeySigner.generate(), KeySigner.generate()
    message = await signed(client, server.pubkey, '{"jsonrpc":"2.0","id":1,"method":"ping"}')
    wrap = contextvm.wrap(message, server.pubkey, kind)
    assert wrap["kind"] == kind and wrap["pubkey"] != client.pubkey, "a one-time key"
    assert wrap["tags"] == [["p", server.pubkey]]
    inner = contextvm.inner_message(await contextvm.unwrap(wrap, server), server.pubkey)
    assert inner == message
    with pytest.raises(UnwrapError, match="cannot decrypt"):
        await contextvm.unwrap(wrap, other)


async def test_the_inner_message_must_be_signed_a_25910_and_addressed_to_us() -> None:
    client, server = KeySigner.generate(), KeySigner.generate()
    message = await signed(client, server.pubkey)
    with pytest.raises(UnwrapError, match="id mismatch"):
        contextvm.inner_message({**message, "content": "changed"}, server.pubkey)
    with pytest.raises(UnwrapError, match="not addressed to us"):
        contextvm.inner_message(message, client.pubkey)
    note = await client.sign_event({"kind": 1, "content": "", "tags": [], "created_at": 1})
    with pytest.raises(UnwrapError, match="expected 25910"):
        contextvm.inner_message(note, server.pubkey)
    with pytest.raises(ValueError, match="not a ContextVM gift wrap"):
        contextvm.wrap(message, server.pubkey, 4)


async def test_a_message_over_nip44s_limit_is_not_wrapped() -> None:
    client, server = KeySigner.generate(), KeySigner.generate()
    big = await signed(client, server.pubkey, "x" * contextvm.NIP44_MAX_PLAINTEXT)
    assert not contextvm.fits(big)
    with pytest.raises(ValueError, match="does not fit"):
        contextvm.wrap(big, server.pubkey, GIFT_WRAP_KIND)


def test_oversized_frames_reassemble_in_any_order_and_check_their_digest() -> None:
    whole = json.dumps({"jsonrpc": "2.0", "id": 3, "result": {"data": "é" * 70_000}})
    frames = contextvm.oversized_frames(whole, "t")
    assert [f["params"]["cvm"]["frameType"] for f in (frames[0], frames[-1])] == ["start", "end"]
    assert frames[0]["params"]["cvm"]["totalChunks"] == len(frames) - 2 > 1
    parts = contextvm.Reassembly()
    shuffled = [frames[0], *reversed(frames[1:-1]), frames[-1]]
    results = [parts.take(f) for f in shuffled if contextvm.Reassembly.is_frame(f)]
    assert results[:-1] == [None] * (len(frames) - 1) and results[-1] == whole

    broken = contextvm.Reassembly()
    for frame in frames[:2] + frames[3:-1]:  # a chunk lost
        broken.take(frame)
    with pytest.raises(ValueError, match="digest"):
        broken.take(frames[-1])
    assert not contextvm.Reassembly.is_frame({"params": {"progress": 1, "message": "waiting"}})
