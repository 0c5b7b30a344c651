"""Saved logins and ``ask`` conversations are never at rest in plaintext (issue 33 §7).

On SQLite and on PostgreSQL: a real page sets an HttpOnly cookie and local storage, the
controller saves its state, and the daemon saves the session after each command (another
worker is live, so the controller could move); then no file of the state directory, and no
row of any table, holds either value, in clear, hex or base64.  A sealed row opens only as
itself (its owner, its name, this identity), and rows an older release wrote in plaintext
are read, then sealed.
"""

from __future__ import annotations

import base64
import json
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable
from http.server import BaseHTTPRequestHandler

import pytest

from nostr_browserd.daemon.placement import preferred
from nostr_browserd.daemon.session_state import SESSION_STATE
from nostr_browserd.daemon.store import SqliteStore, Store
from nostr_browserd.daemon.store.postgres import PostgresStore
from nostr_browserd.errors import BrowserdError, ErrorCode
from nostr_browserd.login.readonly import ReadOnlySigner
from nostr_browserd.nostr.signer import KeySigner, Signer
from tests.fixtures.daemon import (
    SdkController,
    daemon_pubkey,
    start_daemon_fixture,  # noqa: F401
    wait_until,
)
from tests.fixtures.fake_provider import (
    call,
    fake_provider_fixture,  # noqa: F401
    say,
)
from tests.fixtures.plaintext import files_holding, relations_holding, rows_holding
from tests.fixtures.postgres import fresh_database
from tests.fixtures.site import serving

COOKIE = "sid-" + secrets.token_hex(16)  # what the page's Set-Cookie (HttpOnly) carries
LOCAL = "ls-" + secrets.token_hex(16)  # what the page's script puts in local storage
NOTE = "note-" + secrets.token_hex(16)  # page text that ask's model reads


class LoginPage(BaseHTTPRequestHandler):
    """A site that logs whoever opens it in: a session cookie, and a token in storage."""

    def do_GET(self) -> None:
        body = (
            f"<title>in</title><script>localStorage.setItem('token', '{LOCAL}')</script>"
            f"<p id=who>Signed in</p><p id=note>{NOTE}</p>"
        ).encode()
        self.send_response(200)
        self.send_header("Set-Cookie", f"sid={COOKIE}; Path=/; HttpOnly; SameSite=Lax")
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture(params=["sqlite", "postgresql"])
def backend(request) -> str:
    """``""`` for SQLite in the state directory, else a fresh PostgreSQL database's URL."""
    if request.param == "sqlite":
        return ""
    return fresh_database(request.getfixturevalue("postgres_dsn"))


async def store_at(backend: str, state_dir, signer: Signer | None = None) -> Store:
    """Another connection to the daemon's store, as a second worker or an operator opens it."""
    if backend:
        return await PostgresStore.connect(backend, signer=lambda: signer)
    return SqliteStore(state_dir / "state.sqlite3", lambda: signer)


async def test_no_saved_login_is_at_rest_in_plaintext(
    nostr_relay_url, start_daemon, tmp_path, backend
):
    state_dir = tmp_path / "state"
    async with SdkController([nostr_relay_url]) as alice:
        # Another worker is live on the store (so alice's session is saved after each
        # command, for it to take her over), and alice prefers the daemon under test.
        # Each pair of names is a fresh coin toss; a fixed "w1" against many peers is not
        # (when "w1" ranks low for alice's key, every peer beats it).
        mine, peer = next(
            (f"w{i}", f"peer{i}")
            for i in range(100)
            if preferred(alice.pubkey, [f"w{i}", f"peer{i}"]) == f"w{i}"
        )
        other = await store_at(backend, state_dir)
        assert await other.worker_up(peer, "elsewhere/1/peer", silent_for=600)
        await other.close()
        state = {"worker": mine, "lease": 600, **({"database": backend} if backend else {})}
        daemon = await start_daemon([nostr_relay_url], controllers=[alice.npub], state=state)
        assert daemon.worker is not None and daemon.worker.shared(), "the peer is live"
        me = await daemon_pubkey(daemon)

        with serving(LoginPage) as site:
            answer = await alice.command(me, {"tool": "open", "params": {"url": f"{site}/"}})
            assert answer["success"], answer

            async def session_saved() -> bool:
                session = await daemon.store.load_state(alice.pubkey, SESSION_STATE)
                return session is not None and COOKIE in json.dumps(session)

            await wait_until(session_saved)  # the worker's save after the command
            answer = await alice.command(me, {"tool": "state_save", "params": {"name": "work"}})
            assert answer["success"], answer

        kept = json.dumps(await daemon.store.load_state(alice.pubkey, "work"))
        assert COOKIE in kept and LOCAL in kept, "the saved state holds the login"
        assert LOCAL in json.dumps(await daemon.store.load_state(alice.pubkey, SESSION_STATE))
        for value in (COOKIE, LOCAL):
            assert files_holding(state_dir, value) == [], "no file holds it"
            assert await rows_holding(daemon.store, value) == [], "no row holds it"


async def test_an_ask_conversation_is_kept_sealed(
    nostr_relay_url, fake_provider, start_daemon, tmp_path, backend
):
    state_dir = tmp_path / "state"
    async with SdkController([nostr_relay_url]) as phone:
        ask = {"provider": "openai", "openai": {"base_url": fake_provider.base_url("openai")}}
        daemon = await start_daemon(
            [nostr_relay_url],
            controllers=[{"pubkey": phone.npub, "ask": {"auto_approve": ["open"]}}],
            ask={**ask, "max_retries": 0, "progress_interval": 3600},
            state={"database": backend} if backend else {},
        )
        await daemon.key_store().set("openai", "sk-test-sealed-0123456789")
        me = await daemon_pubkey(daemon)
        with serving(LoginPage) as site:
            fake_provider.script = [
                call("open", url=f"{site}/"),
                call("get_text", selector="#note"),
                say("Read it."),
            ]
            task = {"tool": "ask", "params": {"task": "read the note"}}
            answer = await phone.command(me, task, timeout=60)
            assert answer["data"]["status"] == "done", answer
        kept = json.dumps(await daemon.store.conversation(phone.pubkey))
        assert NOTE in kept, "the conversation holds what the model read"
        assert files_holding(state_dir, NOTE) == []
        assert await rows_holding(daemon.store, NOTE) == []


@pytest.fixture
async def stores(backend, tmp_path) -> AsyncIterator[Callable[..., Awaitable[Store]]]:
    """Opens stores on one fresh database of ``backend`` with a given identity."""
    opened: list[Store] = []

    async def open_with(signer: Signer | None) -> Store:
        opened.append(await store_at(backend, tmp_path, signer))
        return opened[-1]

    yield open_with
    for store in opened:
        await store.close()


STATE = {
    "cookies": [{"name": "sid", "value": COOKIE, "domain": "x.test", "path": "/"}],
    "origins": [{"origin": "https://x.test", "localStorage": [{"name": "t", "value": LOCAL}]}],
}


async def test_a_sealed_row_opens_only_as_itself(stores):
    identity = KeySigner.generate()
    store = await stores(identity)
    await store.save_state("alice", "work", STATE)
    await store.save_conversation("alice", [{"role": "user", "content": LOCAL}])
    assert await store.load_state("alice", "work") == STATE
    for where in (("bob", "work"), ("alice", "other"), ("alice", SESSION_STATE)):
        await store._change(
            "INSERT INTO saved_state (owner, name, state, at)"
            " SELECT ?, ?, state, at FROM saved_state WHERE owner = 'alice' AND name = 'work'",
            where,
        )
        with pytest.raises(BrowserdError) as copied:
            await store.load_state(*where)
        assert copied.value.code == ErrorCode.REFUSED, where
        assert "cannot be opened by this identity" in copied.value.message
    await store._change(
        "INSERT INTO conversation (controller, transcript, at)"
        " SELECT 'bob', transcript, at FROM conversation WHERE controller = 'alice'"
    )
    assert await store.conversation("bob") == [], "another owner's conversation opens as none"
    assert await store.conversation("alice") == [{"role": "user", "content": LOCAL}]

    stranger = await stores(KeySigner.generate())  # a copy of the store, another identity
    with pytest.raises(BrowserdError, match="cannot be opened by this identity"):
        await stranger.load_state("alice", "work")
    assert await stranger.conversation("alice") == []

    alices = "owner = 'alice' AND name = 'work'"
    [(text,)] = await store._rows(f"SELECT state FROM saved_state WHERE {alices}")
    envelope = json.loads(text)
    blob = bytearray(base64.b64decode(envelope["gcm"]))
    blob[20] ^= 1  # one bit of the ciphertext, edited in the database
    envelope["gcm"] = base64.b64encode(blob).decode()
    await store._change(f"UPDATE saved_state SET state = ? WHERE {alices}", (json.dumps(envelope),))
    with pytest.raises(BrowserdError, match="cannot be opened"):
        await store.load_state("alice", "work")


async def test_nothing_is_saved_without_an_identity_that_encrypts(stores):
    for signer, code in (
        (None, ErrorCode.NOT_LOGGED_IN),
        (ReadOnlySigner("ab" * 32), ErrorCode.READ_ONLY_IDENTITY),
    ):
        store = await stores(signer)
        with pytest.raises(BrowserdError) as refused:
            await store.save_state("alice", "work", STATE)
        assert refused.value.code == code
        with pytest.raises(BrowserdError):
            await store.save_conversation("alice", [{"role": "user", "content": LOCAL}])
        assert await store.state_names("alice") == [], "nothing stored"
        assert await store.conversation("alice") == []


async def test_a_state_over_nip44s_limit_is_sealed_whole(stores):
    store = await stores(KeySigner.generate())
    big = {
        "cookies": [],
        "origins": [
            {"origin": "https://x.test", "localStorage": [{"name": "blob", "value": LOCAL * 8000}]}
        ],
    }
    await store.save_state("alice", "big", big)
    assert await store.load_state("alice", "big") == big
    assert await rows_holding(store, LOCAL) == []


async def test_plaintext_rows_of_an_older_release_are_read_then_sealed(stores):
    identity = KeySigner.generate()
    store = await stores(identity)
    transcript = [{"role": "user", "content": f"read {LOCAL}"}]
    await store._change(
        "INSERT INTO saved_state (owner, name, state, at) VALUES (?, ?, ?, 0)",
        ("alice", "work", json.dumps(STATE)),
    )
    await store._change(
        "INSERT INTO conversation (controller, transcript, at) VALUES (?, ?, 0)",
        ("alice", json.dumps(transcript)),
    )
    assert await store.load_state("alice", "work") == STATE, "still readable"
    assert await store.conversation("alice") == transcript
    assert await store.seal_plaintext() == 2
    for value in (COOKIE, LOCAL):
        assert await rows_holding(store, value) == []
        if isinstance(store, SqliteStore):  # nor in the file's free space, nor in its -wal
            assert files_holding(store.path.parent, value) == []
        else:  # nor in the rows an update left dead in the tables' files
            assert await relations_holding(store, value, ("saved_state", "conversation")) == []
    assert await store.seal_plaintext() == 0, "once"
    restarted = await stores(identity)
    assert await restarted.load_state("alice", "work") == STATE
    assert await restarted.conversation("alice") == transcript
