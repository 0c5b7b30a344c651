"""Our bunker server against nostr-sdk 0.45's NostrConnect, an independent NIP-46 client."""

from __future__ import annotations

import asyncio
import datetime
import json

import nostr_sdk
import pytest

from nostr_browserd.login.bunker_server import BunkerServer
from nostr_browserd.nostr import nip46
from nostr_browserd.nostr.nip01 import verify_event
from nostr_browserd.nostr.signer import KeySigner

TIMEOUT = datetime.timedelta(seconds=5)


@pytest.fixture
async def served(local_relay_factory):
    relay = await local_relay_factory()
    user = KeySigner.generate()
    server = BunkerServer(user, [relay.url], transport=KeySigner.generate())
    await server.start()
    try:
        yield relay.url, user, server
    finally:
        await server.aclose()


def unsigned(pubkey: str, content: str) -> nostr_sdk.UnsignedEvent:
    body = {
        "pubkey": pubkey,
        "created_at": 1_700_000_000,
        "kind": 1,
        "tags": [["t", "sdk"]],
        "content": content,
    }
    return nostr_sdk.UnsignedEvent.from_json(json.dumps(body))


async def check_client(nc: nostr_sdk.NostrConnect, user: KeySigner) -> None:
    assert (await nc.get_public_key_async()).to_hex() == user.pubkey
    event = await nc.sign_event_async(unsigned(user.pubkey, "signed remotely"))
    assert event.verify()
    verify_event(json.loads(event.as_json()))
    assert event.author().to_hex() == user.pubkey and event.content() == "signed remotely"

    peer = nostr_sdk.Keys.generate()
    user_pk = nostr_sdk.PublicKey.parse(user.pubkey)
    ct = await nc.nip44_encrypt_async(peer.public_key(), "n44")
    assert nostr_sdk.nip44_decrypt(peer.secret_key(), user_pk, ct) == "n44"
    ct = nostr_sdk.nip44_encrypt(peer.secret_key(), user_pk, "back44", nostr_sdk.Nip44Version.V2)
    assert await nc.nip44_decrypt_async(peer.public_key(), ct) == "back44"
    ct = await nc.nip04_encrypt_async(peer.public_key(), "n04")
    assert nostr_sdk.nip04_decrypt(peer.secret_key(), user_pk, ct) == "n04"
    ct = nostr_sdk.nip04_encrypt(peer.secret_key(), user_pk, "back04")
    assert await nc.nip04_decrypt_async(peer.public_key(), ct) == "back04"


async def test_nostr_sdk_client_with_our_bunker_url(served) -> None:
    _, user, server = served
    uri = nostr_sdk.NostrConnectUri.parse(server.bunker_url)
    nc = nostr_sdk.NostrConnect(uri, nostr_sdk.Keys.generate(), TIMEOUT, None)
    await check_client(nc, user)
    assert len(server.clients) == 1


async def test_nostr_sdk_client_initiated_nostrconnect(served) -> None:
    relay_url, user, server = served
    app = nostr_sdk.Keys.generate()
    uri = nip46.nostrconnect_uri(
        app.public_key().to_hex(), [relay_url], "pairing-secret", name="sdk app"
    )
    nc = nostr_sdk.NostrConnect(nostr_sdk.NostrConnectUri.parse(uri), app, TIMEOUT, None)
    # The sdk subscribes lazily, on its first call; the pairing answer is an ephemeral event,
    # so (like a signer app whose user scans again) repeat it until the client has it.
    first_call = asyncio.ensure_future(nc.get_public_key_async())
    while not first_call.done():
        assert await server.accept_nostrconnect(uri) == app.public_key().to_hex()
        await asyncio.wait([first_call], timeout=0.2)
    assert first_call.result().to_hex() == user.pubkey
    await check_client(nc, user)


async def test_nostr_sdk_client_with_a_used_secret_gets_nothing(served) -> None:
    _, user, server = served
    url = server.bunker_url
    first = nostr_sdk.NostrConnect(
        nostr_sdk.NostrConnectUri.parse(url), nostr_sdk.Keys.generate(), TIMEOUT, None
    )
    assert (await first.get_public_key_async()).to_hex() == user.pubkey
    second = nostr_sdk.NostrConnect(
        nostr_sdk.NostrConnectUri.parse(url),
        nostr_sdk.Keys.generate(),
        datetime.timedelta(seconds=2),
        None,
    )
    with pytest.raises(nostr_sdk.NostrSdkError) as err:
        await second.get_public_key_async()
    assert "secret" in str(err.value)
