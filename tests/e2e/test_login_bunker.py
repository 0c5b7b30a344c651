"""NIP-46: our bunker client and our bunker server, over real relays, and nostr-sdk's
NostrConnect (an independent implementation) as a client of our server.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
from collections.abc import AsyncIterator
from typing import Any

import pytest

from nostr_browserd.daemon.app import login_params
from nostr_browserd.daemon.config import ConfigError, load_config
from nostr_browserd.errors import BrowserdError, ErrorCode
from nostr_browserd.login import bunker_server
from nostr_browserd.login.bunker import BunkerSigner
from nostr_browserd.login.bunker_server import Approval, BunkerServer
from nostr_browserd.login.manager import IdentityManager
from nostr_browserd.login.nip46_channel import Channel, Incoming
from nostr_browserd.login.params import Nip46Login
from nostr_browserd.nostr import nip46
from nostr_browserd.nostr.nip01 import verify_event
from nostr_browserd.nostr.relay import RelayPool
from nostr_browserd.nostr.signer import KeySigner
from nostr_browserd.supervise import stopped_readers, supervise
from tests.fixtures.daemon import wait_until
from tests.fixtures.leaks import LEAKS

LEAKS.secret("one-time-secret", "a bunker's pairing secret")


@contextlib.asynccontextmanager
async def running(server: BunkerServer) -> AsyncIterator[BunkerServer]:
    await server.start()
    try:
        yield server
    finally:
        await server.aclose()


REQUEST_TIMEOUT = 5.0
"""The clients' wait for each answer: a whole round trip through a relay, under load."""


@contextlib.asynccontextmanager
async def client(url: str, **kwargs: Any) -> AsyncIterator[BunkerSigner]:
    signer = await BunkerSigner.connect(url, **{"timeout": REQUEST_TIMEOUT, **kwargs})
    try:
        yield signer
    finally:
        await signer.aclose()


@pytest.fixture
async def relay_url(local_relay_factory) -> str:
    return (await local_relay_factory()).url


async def exercise(signer: Any, user: KeySigner) -> None:
    """Every Signer call through ``signer``, checked against a local peer."""
    assert await signer.public_key() == user.pubkey
    event = await signer.sign_event({"kind": 1, "content": "hello", "tags": [["t", "x"]]})
    verify_event(event)
    assert (event["pubkey"], event["content"], event["tags"]) == (
        user.pubkey,
        "hello",
        [["t", "x"]],
    )
    peer = KeySigner.generate()
    for scheme in ("nip04", "nip44"):
        ct = await getattr(signer, f"{scheme}_encrypt")(peer.pubkey, f"to peer {scheme}")
        assert await getattr(peer, f"{scheme}_decrypt")(user.pubkey, ct) == f"to peer {scheme}"
        back = await getattr(peer, f"{scheme}_encrypt")(user.pubkey, "from peer")
        assert await getattr(signer, f"{scheme}_decrypt")(peer.pubkey, back) == "from peer"


@pytest.mark.parametrize("separate_transport", [False, True], ids=["same-key", "own-key"])
async def test_our_client_against_our_bunker(relay_url, separate_transport) -> None:
    user = KeySigner.generate()
    transport = KeySigner.generate() if separate_transport else None
    async with running(BunkerServer(user, [relay_url], transport=transport)) as server:
        assert (server.pubkey == user.pubkey) is not separate_transport
        async with client(server.bunker_url) as signer:
            await exercise(signer, user)
            info = signer.describe()
            assert info["remote_signer"] == server.pubkey and info["transport"] == "nip44"


async def test_over_nostr_relay_subprocess(nostr_relay_url) -> None:
    user = KeySigner.generate()
    async with (
        running(BunkerServer(user, [nostr_relay_url])) as server,
        client(server.bunker_url) as signer,
    ):
        await exercise(signer, user)


async def test_secret_works_once_and_a_paired_client_may_reconnect(relay_url) -> None:
    user, app = KeySigner.generate(), KeySigner.generate()
    async with running(BunkerServer(user, [relay_url], secret="one-time-secret")) as server:
        url = server.bunker_url
        async with client(url, app_key=app) as first:
            assert await first.public_key() == user.pubkey
        with pytest.raises(BrowserdError) as err:
            async with client(url):
                pass
        assert err.value.code is ErrorCode.SIGNER_ERROR and "already used" in err.value.message
        async with client(url, app_key=app) as again:  # same client key: still paired
            assert await again.public_key() == user.pubkey
        assert "one-time-secret" not in server.bunker_url


async def test_a_reusable_secret_pairs_every_worker_and_no_stranger(relay_url) -> None:
    """Workers sharing one bunker URL file each pair with its secret; a wrong one still fails."""
    user = KeySigner.generate()
    server = BunkerServer(user, [relay_url], secret="one-time-secret", reusable_secret=True)
    async with running(server):
        url = server.bunker_url
        # More workers than the refused connects a stranger is answered a minute.
        async with contextlib.AsyncExitStack() as stack:
            workers = [await stack.enter_async_context(client(url)) for _ in range(5)]
            for worker in workers:
                verify_event(await worker.sign_event({"kind": 13, "content": "a seal"}))
        assert len(server.clients) == 5 and server.bunker_url == url
        with pytest.raises(BrowserdError) as err:
            async with client(nip46.bunker_url(server.pubkey, [relay_url], "wrong")):
                pass
        assert "invalid or already used secret" in err.value.message


async def test_a_restarted_bunker_is_paired_with_again(relay_url) -> None:
    """A restarted bunker has forgotten its clients and ignores their requests: a worker's
    next call gets no answer, pairs again with the URL's (reusable) secret, and goes through."""
    user = KeySigner.generate()
    kept = {"secret": "a-reusable-secret", "reusable_secret": True}
    async with running(BunkerServer(user, [relay_url], **kept)) as first:
        url = first.bunker_url
        worker = await BunkerSigner.connect(url, timeout=2.0)
    try:
        async with running(BunkerServer(user, [relay_url], **kept)) as second:
            assert second.clients == {}
            verify_event(await worker.sign_event({"kind": 13, "content": "after a restart"}))
            assert len(second.clients) == 1
    finally:
        await worker.aclose()


async def test_wrong_secret_is_refused(relay_url) -> None:
    user = KeySigner.generate()
    async with running(BunkerServer(user, [relay_url], secret="right")) as server:
        wrong = nip46.bunker_url(server.pubkey, [relay_url], "wrong")
        with pytest.raises(BrowserdError) as err:
            async with client(wrong):
                pass
        assert "invalid or already used secret" in err.value.message
        assert "wrong" not in err.value.message.replace("invalid or already used", "")


async def test_permissions_per_client_and_auto_policy(relay_url) -> None:
    user = KeySigner.generate()
    perms = nip46.parse_perms("sign_event:1,nip44_encrypt")
    async with (
        running(BunkerServer(user, [relay_url], perms=perms)) as server,
        client(server.bunker_url) as signer,
    ):
        verify_event(await signer.sign_event({"kind": 1, "content": "ok"}))
        await signer.nip44_encrypt(KeySigner.generate().pubkey, "ok")
        for call in (
            signer.sign_event({"kind": 4, "content": "no"}),
            signer.nip44_decrypt(user.pubkey, "AAAA"),
        ):
            with pytest.raises(BrowserdError, match="not permitted"):
                await call
        assert server.clients == {signer._channel.pubkey: "sign_event:1,nip44_encrypt"}


async def test_client_may_ask_for_fewer_permissions(relay_url) -> None:
    user = KeySigner.generate()
    async with running(BunkerServer(user, [relay_url])) as server:
        wanted = nip46.parse_perms("sign_event:7,get_public_key")
        async with client(server.bunker_url, perms=wanted) as signer:
            verify_event(await signer.sign_event({"kind": 7, "content": "+"}))
            with pytest.raises(BrowserdError, match="not permitted"):
                await signer.sign_event({"kind": 1, "content": "no"})


async def test_auth_url_is_surfaced_while_the_request_keeps_waiting(relay_url) -> None:
    user = KeySigner.generate()
    asked: list[Approval] = []
    release = asyncio.Event()

    async def operator(approval: Approval) -> str:
        asked.append(approval)
        await release.wait()
        return "always"

    seen: list[str] = []
    challenged = asyncio.Event()

    def on_auth_url(url: str) -> None:
        seen.append(url)
        challenged.set()

    server = BunkerServer(
        user, [relay_url], perms=(), approver=operator, auth_url="https://approve.example/r/1"
    )
    async with (
        running(server),
        client(server.bunker_url, on_auth_url=on_auth_url) as signer,
    ):
        task = asyncio.create_task(signer.sign_event({"kind": 1, "content": "please"}))
        await asyncio.wait_for(challenged.wait(), 2 * REQUEST_TIMEOUT)
        assert seen == ["https://approve.example/r/1"]
        assert signer.describe()["auth_urls"] == ["https://approve.example/r/1"]
        # The request was sent before the challenge came: its own deadline has passed.
        await asyncio.sleep(REQUEST_TIMEOUT)
        assert not task.done(), "the auth_url extended the wait"
        release.set()
        event = await task
        verify_event(event)
        assert asked[0].method == "sign_event" and asked[0].kind == 1
        assert "please" in asked[0].summary
        # "always" granted sign_event:1 to this client: no second approval needed
        await signer.sign_event({"kind": 1, "content": "again"})
        assert len(asked) == 1


async def test_operator_can_decline(relay_url) -> None:
    async def no(approval: Approval) -> str:
        return "deny"

    server = BunkerServer(KeySigner.generate(), [relay_url], perms=(), approver=no)
    async with running(server), client(server.bunker_url) as signer:
        with pytest.raises(BrowserdError, match="declined"):
            await signer.nip44_encrypt(KeySigner.generate().pubkey, "x")


class LyingSigner(KeySigner):
    """Claims one key, signs with another (or tampers with the event)."""

    def __init__(self, claimed: KeySigner, actual: KeySigner, tamper: bool = False) -> None:
        super().__init__(actual.secret)
        self._claimed, self._tamper = claimed, tamper

    async def public_key(self) -> str:
        return self._claimed.pubkey

    async def sign_event(self, template: dict[str, Any]) -> dict[str, Any]:
        if self._tamper:
            return await self._claimed.sign_event({**template, "content": "tampered"})
        return await super().sign_event(template)


@pytest.mark.parametrize(("tamper", "why"), [(False, "not the logged-in key"), (True, "changed")])
async def test_a_bad_signature_from_the_bunker_is_rejected(relay_url, tamper, why) -> None:
    claimed = KeySigner.generate()
    liar = LyingSigner(claimed, KeySigner.generate(), tamper)
    server = BunkerServer(liar, [relay_url], transport=KeySigner.generate())
    async with running(server), client(server.bunker_url) as signer:
        assert await signer.public_key() == claimed.pubkey
        with pytest.raises(BrowserdError) as err:
            await signer.sign_event({"kind": 1, "content": "hi"})
        assert err.value.code is ErrorCode.SIGNER_ERROR and why in err.value.message


async def test_nip04_fallback_for_a_legacy_signer(relay_url) -> None:
    user = KeySigner.generate()
    server = BunkerServer(user, [relay_url], nip04_only=True)
    async with running(server), client(server.bunker_url, connect_timeout=0.5) as signer:
        assert signer.describe()["transport"] == "nip04"
        await exercise(signer, user)


async def test_request_timeout_when_the_bunker_goes_away(relay_url) -> None:
    user = KeySigner.generate()
    server = BunkerServer(user, [relay_url])
    async with running(server):
        signer = await BunkerSigner.connect(server.bunker_url, timeout=REQUEST_TIMEOUT)
    signer._timeout = 0.5  # the wait for an answer nobody is left to send
    try:
        with pytest.raises(BrowserdError) as err:
            await signer.sign_event({"kind": 1, "content": "anyone?"})
        assert err.value.code is ErrorCode.TIMEOUT and relay_url in err.value.message
    finally:
        await signer.aclose()


async def test_one_deeply_nested_message_silences_neither_end(relay_url) -> None:
    """Issue 9 §1.1: NIP-44 of ``"[" * 60000`` made json.loads raise RecursionError, which
    ended the reader of whichever end it was p-tagged to, for good.  (20,000 is as deadly
    and fits the test relay's 64 KiB event limit.)"""
    user, app, stranger = KeySigner.generate(), KeySigner.generate(), KeySigner.generate()
    async with (
        running(BunkerServer(user, [relay_url])) as server,
        client(server.bunker_url, app_key=app) as signer,
        RelayPool([relay_url]) as pool,
    ):
        for target in (server.pubkey, app.pubkey):  # the bunker's key is in its URL
            poison = await stranger.nip44_encrypt(target, "[" * 20000)
            event = await stranger.sign_event(nip46.event_template(target, poison))
            assert (await pool.publish(event)).ok
        # The relay delivers in order: both readers met the poison before this request.
        verify_event(await signer.sign_event({"kind": 1, "content": "still served"}))


async def test_both_ends_survive_a_relay_restart(local_relay_factory) -> None:
    relay = await local_relay_factory()
    user = KeySigner.generate()
    async with (
        running(BunkerServer(user, [relay.url])) as server,
        client(server.bunker_url, timeout=2.0) as signer,
    ):
        await signer.public_key()
        await relay.restart()
        # A request racing either end's resubscription is sent again until answered.
        assert await signer._call("ping") == "pong"
        verify_event(await signer.sign_event({"kind": 1, "content": "after restart"}))


async def test_a_request_lost_around_a_reconnect_is_sent_again(local_relay_factory) -> None:
    relay = await local_relay_factory()
    user = KeySigner.generate()
    async with (
        running(BunkerServer(user, [relay.url])) as server,
        client(server.bunker_url, timeout=2.0) as signer,
    ):
        await relay.restart()
        assert await server._channel.wait_connected(10) and await signer._channel.wait_connected(10)
        handle, seen = server._handle, []

        async def lose_the_first_copy(incoming: Incoming, request: nip46.Request) -> None:
            seen.append(request.id)
            if len(seen) > 1:  # what a relay does to an event nobody was subscribed for yet
                await handle(incoming, request)

        server._handle = lose_the_first_copy  # type: ignore[method-assign]
        assert await signer._call("ping") == "pong"
        assert len(seen) >= 2 and len(set(seen)) == 1  # the same request, the same id


async def test_a_repeated_request_id_is_answered_once_and_the_same(relay_url) -> None:
    user = KeySigner.generate()
    signed: list[dict] = []

    class Counting(KeySigner):
        async def sign_event(self, template: dict) -> dict:
            signed.append(template)
            return await super().sign_event(template)

    served = Counting(user.secret)
    async with running(BunkerServer(served, [relay_url], secret="s")) as server:
        app = KeySigner.generate()
        channel = Channel([relay_url], app, app.pubkey)
        await channel.open()
        try:
            pair = nip46.Request("pair", "connect", (server.pubkey, "s"))
            await channel.send(server.pubkey, pair)
            template = json.dumps({"kind": 1, "content": "once", "tags": [], "created_at": 1})
            request = nip46.Request("same-id", "sign_event", (template,))
            answers: dict[str, list[nip46.Response]] = {}
            async with asyncio.timeout(10):
                async for incoming in channel.messages():
                    assert isinstance(incoming.message, nip46.Response)
                    answers.setdefault(incoming.message.id, []).append(incoming.message)
                    if incoming.message.id == "pair":
                        await channel.send(server.pubkey, request)
                        await channel.send(server.pubkey, request)  # re-sent, same id
                    if len(answers.get("same-id", [])) == 1:
                        await channel.send(server.pubkey, request)  # after the answer
                    if len(answers.get("same-id", [])) == 2:
                        break
        finally:
            await channel.close()
    first, second = answers["same-id"]
    assert first.result == second.result and first.result is not None
    # signed once (the rest is the transport's kind 24133), answered each time the same way
    assert [t["kind"] for t in signed].count(1) == 1


async def test_unpaired_strangers_get_no_signed_answers(relay_url) -> None:
    user = KeySigner.generate()
    async with running(BunkerServer(user, [relay_url], secret="right")) as server:
        stranger = KeySigner.generate()
        channel = Channel([relay_url], stranger, stranger.pubkey)
        await channel.open()
        try:
            for method, params in [
                ("ping", ()),
                ("get_public_key", ()),
                ("sign_event", (json.dumps({"kind": 1, "content": "x"}),)),
                ("nip44_decrypt", (user.pubkey, "x")),
            ]:
                await channel.send(server.pubkey, nip46.Request(method, method, params))
            # A wrong secret is still told so (a mistyped URL deserves an answer), rarely.
            await channel.send(server.pubkey, nip46.Request("c", "connect", (server.pubkey, "x")))
            got = []
            async with asyncio.timeout(10):
                async for incoming in channel.messages():
                    got.append(incoming.message.id)
                    if incoming.message.id == "c":
                        break
        finally:
            await channel.close()
    assert got == ["c"]


async def test_strangers_get_a_few_refused_connects_a_minute_and_no_more(relay_url) -> None:
    """Every answer is signed and published: wrong secrets are told so only
    ``_STRANGER_ANSWERS`` times a minute, for all strangers together."""
    user, stranger = KeySigner.generate(), KeySigner.generate()
    cap = bunker_server._STRANGER_ANSWERS
    async with running(BunkerServer(user, [relay_url], secret="right")) as server:
        channel = Channel([relay_url], stranger, stranger.pubkey)
        await channel.open()
        wrong = [f"wrong-{i}" for i in range(cap + 2)]
        try:
            for request_id in wrong:
                connect = nip46.Request(request_id, "connect", (server.pubkey, "x"))
                await channel.send(server.pubkey, connect)
            # Then the right secret (never capped), then a ping once paired: its answer comes
            # after every answer the wrong ones could have had.
            await channel.send(
                server.pubkey, nip46.Request("right", "connect", (server.pubkey, "right"))
            )
            got = []
            async with asyncio.timeout(10):
                async for incoming in channel.messages():
                    got.append(incoming.message.id)
                    if incoming.message.id == "right":
                        await channel.send(server.pubkey, nip46.Request("ping", "ping", ()))
                    if incoming.message.id == "ping":
                        break
        finally:
            await channel.close()
    assert sorted(got) == sorted([*wrong[:cap], "right", "ping"])


async def test_nostrconnect_flow_our_client_our_bunker(relay_url) -> None:
    user = KeySigner.generate()
    async with running(BunkerServer(user, [relay_url], transport=KeySigner.generate())) as server:
        shown: list[str] = []

        def show(uri: str) -> None:
            shown.append(uri)
            asyncio.get_running_loop().create_task(server.accept_nostrconnect(uri))

        signer = await BunkerSigner.from_nostrconnect([relay_url], show_uri=show, timeout=5)
        try:
            pointer = nip46.parse_nostrconnect_uri(shown[0])
            assert pointer.name == "nostr-browserd" and pointer.relays == (relay_url,)
            await exercise(signer, user)
            assert signer.describe()["remote_signer"] == server.pubkey
        finally:
            await signer.aclose()


async def test_nostrconnect_ignores_an_answer_without_our_secret(relay_url, caplog) -> None:
    caplog.set_level(logging.INFO)
    user, impostor = KeySigner.generate(), KeySigner.generate()
    async with (
        running(BunkerServer(impostor, [relay_url])) as forger,
        running(BunkerServer(user, [relay_url])) as genuine,
    ):
        answered: list[str] = []

        async def answer_forged_then_genuine(uri: str) -> None:
            await forger.accept_nostrconnect(uri.replace("secret=", "secret=forged"))
            answered.append("forged")
            # The forged answer reached the client and was ignored before the genuine one.
            await wait_until(lambda: "ignored a pairing answer without our secret" in caplog.text)
            await genuine.accept_nostrconnect(uri)
            answered.append("genuine")

        def show(uri: str) -> None:
            asyncio.get_running_loop().create_task(answer_forged_then_genuine(uri))

        signer = await BunkerSigner.from_nostrconnect([relay_url], show_uri=show, pair_timeout=30)
        try:
            assert answered == ["forged", "genuine"]
            assert signer.describe()["remote_signer"] == genuine.pubkey
            assert await signer.public_key() == user.pubkey
        finally:
            await signer.aclose()


async def test_manager_logs_in_through_a_bunker(relay_url) -> None:
    user = KeySigner.generate()
    async with running(BunkerServer(user, [relay_url])) as server:
        manager = IdentityManager()
        result = await manager.login({"method": "nip46", "bunker_url": server.bunker_url})
        assert result["pubkey"] == user.pubkey and result["method"] == "nip46"
        status = manager.status()
        assert status["signer"]["remote_signer"] == server.pubkey
        assert "secret" not in json.dumps(status)
        verify_event(await manager.signer.sign_event({"kind": 1, "content": "via manager"}))
        await manager.logout()


async def test_the_daemon_reads_its_bunker_url_from_a_0600_file(relay_url, tmp_path) -> None:
    """Issue 9 §1.9: the bunker:// URL holds the pairing secret; keep it out of the config."""
    user = KeySigner.generate()
    async with running(BunkerServer(user, [relay_url])) as server:
        url_file = tmp_path / "bunker"
        url_file.write_text(server.bunker_url + "\n")
        config = tmp_path / "config.toml"
        config.write_text(f'[identity]\nmethod = "nip46"\nbunker_url_file = "{url_file}"\n')
        params = login_params(load_config(config, {}).identity, tmp_path)
        assert params == Nip46Login(method="nip46", bunker_url_file=url_file)
        manager = IdentityManager()
        url_file.chmod(0o644)
        with pytest.raises(BrowserdError) as err:
            await manager.login(params)  # checked like the key file, before any network
        assert "too open" in err.value.message and server.bunker_url not in err.value.message
        url_file.chmod(0o600)
        assert (await manager.login(params))["pubkey"] == user.pubkey
        await manager.logout()
    both = tmp_path / "both.toml"
    both.write_text(config.read_text() + 'bunker_url = "bunker://…"\n')
    with pytest.raises(ConfigError, match=r"one of identity\.bunker_url_file"):
        load_config(both, {})


async def test_the_bunker_exits_when_its_reader_is_given_up(relay_url, monkeypatch) -> None:
    """A reader that keeps failing is given up on; the bunker process then exits with an
    error (so systemd restarts it) instead of staying up deaf."""

    async def broken(self: Channel) -> AsyncIterator[Incoming]:
        raise RuntimeError("a bug in the reader")
        yield  # an async generator, like the real one

    monkeypatch.setattr(Channel, "messages", broken)
    monkeypatch.setattr(bunker_server, "supervise", functools.partial(supervise, pause=0))
    monkeypatch.setattr(bunker_server, "_HEALTH_CHECK", 0.01)
    serving = bunker_server.serve_bunker(
        KeySigner.generate(), [relay_url], on_ready=lambda url: None
    )
    with pytest.raises(BrowserdError) as err:
        await asyncio.wait_for(serving, 30)
    assert err.value.code is ErrorCode.UNAVAILABLE and "bunker reader" in err.value.message
    assert stopped_readers() is None  # it went with the server


def test_bad_bunker_url_is_invalid_params() -> None:
    with pytest.raises(BrowserdError) as err:
        asyncio.run(BunkerSigner.connect("bunker://nothex?relay=wss://x&secret=abc"))
    assert err.value.code is ErrorCode.INVALID_PARAMS and "abc" not in err.value.message


async def test_unreachable_relay_gives_a_clear_error() -> None:
    from tests.fixtures.relays import free_port

    url = nip46.bunker_url(KeySigner.generate().pubkey, [f"ws://127.0.0.1:{free_port()}"], "s")
    with pytest.raises(BrowserdError) as err:
        await BunkerSigner.connect(url, timeout=0.5)
    assert err.value.code in (ErrorCode.UNAVAILABLE, ErrorCode.TIMEOUT)
    assert "127.0.0.1" in err.value.message


async def test_manager_status_shows_a_pending_auth_url(relay_url, caplog) -> None:
    release = asyncio.Event()

    async def operator(approval: Approval) -> str:
        await release.wait()
        return "once"

    user = KeySigner.generate()
    server = BunkerServer(user, [relay_url], perms=(), approver=operator, auth_url="https://ok/1")
    async with running(server):
        manager = IdentityManager()
        await manager.login({"method": "nip46", "bunker_url": server.bunker_url})
        task = asyncio.create_task(manager.signer.sign_event({"kind": 1, "content": "hm"}))
        for _ in range(500):
            if manager.status()["signer"]["auth_urls"]:
                break
            await asyncio.sleep(0.01)
        assert manager.status()["signer"]["auth_urls"] == ["https://ok/1"]
        assert "https://ok/1" in caplog.text
        release.set()
        verify_event(await task)
        assert manager.status()["signer"]["auth_urls"] == []
        await manager.logout()


@pytest.mark.parametrize(
    ("typed", "decision"), [("y\n", "once"), ("a\n", "always"), ("\n", "deny"), ("", "deny")]
)
async def test_terminal_prompt(monkeypatch, capsys, typed, decision) -> None:
    import io

    from nostr_browserd.login.bunker_server import TerminalPrompt

    monkeypatch.setattr("sys.stdin", io.StringIO(typed))
    approval = Approval("ab" * 32, "sign_event", 1, "sign_event kind 1: 'hi'")
    assert await TerminalPrompt()(approval) == decision
    assert "sign_event kind 1: 'hi'" in capsys.readouterr().err
