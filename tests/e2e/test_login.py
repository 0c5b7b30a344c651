"""Issue 15: logged out means logged out, on the local channel, a real relay and Chromium.

The daemon starts with no identity (``[identity] method = "none"``); browsing is refused until
``login``; ``logout`` closes the Nostr side and every browser context; a later login with a
seed answers DMs to the new key and announces it; ``switch_identity`` to a bunker answers DMs
to the bunker's key.  A DM to a logged-out key is shown to reach the relay and get no answer.
"""

from __future__ import annotations

import asyncio
import datetime
import json
import secrets

import nostr_sdk as n
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from nostr_browserd.login.bunker_server import BunkerServer
from nostr_browserd.nostr.keys import generate_secret, public_key_hex
from nostr_browserd.nostr.nip06 import generate_mnemonic, secret_from_mnemonic
from nostr_browserd.nostr.nip19 import nsec_encode
from nostr_browserd.nostr.signer import KeySigner
from tests.e2e.test_daemon_app import local
from tests.e2e.test_login_bunker import running
from tests.fixtures.daemon import (
    SdkController,
    start_daemon_fixture,  # noqa: F401
    wait_until,
)
from tests.fixtures.leaks import LEAKS


async def on_relay(phone: SdkController, f: n.Filter) -> list[n.Event]:
    """What the relay holds for ``f``, read by the independent client."""
    events = await phone.client.fetch_events(
        n.ReqTarget.auto([f]), timeout=datetime.timedelta(seconds=5)
    )
    return events.to_vec() if hasattr(events, "to_vec") else list(events)


async def test_logged_out_means_logged_out(nostr_relay_url, start_daemon, site_url):
    async with SdkController([nostr_relay_url]) as phone:
        daemon = await start_daemon(
            [nostr_relay_url], controllers=[phone.npub], identity={"method": "none"}
        )
        # 1. No identity: the local channel is up, a browser tool is NOT_LOGGED_IN.
        assert daemon.link is None
        assert "waiting for login" in (await daemon.status())["direct_messages"]
        refused = await local(daemon, {"id": 1, "tool": "open", "params": {"url": site_url}})
        assert refused["error"]["code"] == "NOT_LOGGED_IN"
        assert "login" in refused["error"]["message"]
        assert "[identity]" in refused["error"]["message"]
        assert daemon.browser.sessions() == [], "nothing ran"
        with pytest.raises(InvalidStatus) as caught:  # an agent logs in with the token only
            async with connect(daemon.local.url):
                pass
        assert caught.value.response.status_code == 401

        # 2. login with an nsec: the tool runs.
        first = generate_secret()
        LEAKS.key(first, "the first identity's key")
        old = public_key_hex(first)
        params = {"method": "local", "nsec": nsec_encode(first)}
        logged = await local(daemon, {"id": 2, "tool": "login", "params": params})
        assert logged["data"]["pubkey"] == old and logged["data"]["readonly"] is False
        opened = await local(daemon, {"id": 3, "tool": "open", "params": {"url": site_url}})
        assert opened["success"], opened
        assert daemon.link is not None and daemon.link.listening

        # 3. logout: NOT_LOGGED_IN again; the Nostr side and the browser contexts are closed.
        out = await local(daemon, {"id": 4, "tool": "logout"})
        assert out["data"]["logged_in"] is False
        assert daemon.link is None and daemon.browser.sessions() == []
        refused = await local(daemon, {"id": 5, "tool": "get_url"})
        assert refused["error"]["code"] == "NOT_LOGGED_IN"
        assert any(e.tool == "logout" for e in await daemon.store.recent(10)), "logout is audited"
        # A DM to the old key reaches the relay ...
        unanswered = secrets.token_hex(4)
        sent = await phone.send(old, json.dumps({"id": unanswered, "tool": "get_url"}))
        assert await on_relay(phone, n.Filter().id(n.EventId.parse(sent)))

        # 4. login with a seed: DMs to the new key are answered, its 10050/10002/0 published.
        words = generate_mnemonic()
        LEAKS.seed(words, "the second identity's seed")
        new = public_key_hex(secret_from_mnemonic(words))
        seed = {"method": "seed", "mnemonic": words}
        logged = await local(daemon, {"id": 6, "tool": "login", "params": seed})
        assert logged["data"]["pubkey"] == new and logged["data"]["method"] == "seed"
        assert (await phone.command(new, {"tool": "get_url"}))["success"]
        for kind in (10050, 10002, 0):
            author = n.PublicKey.parse(new)
            announced = n.Filter().kind(n.Kind(kind)).author(author)
            async with asyncio.timeout(20):
                while not await on_relay(phone, announced):
                    await asyncio.sleep(0.05)
        # ... and the one sent to the old key while logged out was never answered: the new
        # key's reply came after it, and nothing came from the old key, nor was it audited.
        await phone.poll()
        assert [r for r in phone.received if r.sender == old] == []
        assert all(e.request_id != unanswered for e in await daemon.store.recent(50))

        # 5. switch_identity to a bunker: DMs to the bunker's key are answered.
        user = KeySigner.generate()
        async with running(BunkerServer(user, [nostr_relay_url])) as bunker:
            LEAKS.secret(bunker.bunker_url, "the bunker URL (its pairing secret)")
            switch = {"method": "nip46", "bunker_url": bunker.bunker_url}
            switched = await local(daemon, {"id": 7, "tool": "switch_identity", "params": switch})
            assert switched["data"]["pubkey"] == user.pubkey
            assert switched["data"]["relays"] == [nostr_relay_url]
            await wait_until(lambda: daemon.link is not None and daemon.link.listening)
            # A DM to the key switched away from reaches the relay ...
            stale = secrets.token_hex(4)
            sent = await phone.send(new, json.dumps({"id": stale, "tool": "get_url"}))
            assert await on_relay(phone, n.Filter().id(n.EventId.parse(sent)))
            assert (await phone.command(user.pubkey, {"tool": "get_url"}))["success"]
            # ... and is not answered (by either key) nor run: the bunker's key answered after it.
            await phone.poll()
            assert [r for r in phone.received if r.json.get("id") == stale] == []
            assert all(e.request_id != stale for e in await daemon.store.recent(50))
            status = await local(daemon, {"id": 8, "tool": "login_status"})
            assert status["data"]["method"] == "nip46" and status["data"]["connected"] is True
            assert "secret" not in json.dumps(status)
            signer = daemon.identity.signer
            out = await local(daemon, {"id": 9, "tool": "logout"})
            assert out["data"]["logged_in"] is False
            assert signer.describe()["connected"] is False, "the bunker's connection is closed"
