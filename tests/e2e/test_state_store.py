"""The state store (replay guard, held commands, audit log, conversations) on both backends.

Every test that takes ``open_store`` runs twice: on SQLite and on a real PostgreSQL server
(tests/fixtures/postgres.py).  ``await open_store()`` opens another instance on the same database:
a restart, or a second worker.
"""

import asyncio
import json
import stat
import time
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest

from nostr_browserd.daemon.config import ConfigError, load_config
from nostr_browserd.daemon.store import SqliteStore, Store
from nostr_browserd.errors import BrowserdError
from nostr_browserd.nostr.keys import generate_secret
from nostr_browserd.nostr.nip19 import nsec_encode
from nostr_browserd.nostr.signer import KeySigner
from nostr_browserd.redact import REDACTED, redact
from nostr_browserd.vault.keeper import VaultRow
from tests.fixtures.postgres import fresh_database


@pytest.fixture(params=["sqlite", "postgresql"])
async def open_store(request, tmp_path) -> AsyncIterator[Callable[[], Awaitable[Store]]]:
    """Opens stores on one fresh database of the backend, all with one identity (workers of
    one daemon); closes them all afterwards."""
    opened: list[Store] = []
    identity = KeySigner.generate()
    if request.param == "sqlite":
        path = tmp_path / "sub" / "state.sqlite3"

        async def make() -> Store:
            return SqliteStore(path, lambda: identity)
    else:
        from nostr_browserd.daemon.store.postgres import PostgresStore

        url = fresh_database(request.getfixturevalue("postgres_dsn"))

        async def make() -> Store:
            return await PostgresStore.connect(url, signer=lambda: identity)

    async def opener() -> Store:
        opened.append(await make())
        return opened[-1]

    yield opener
    for store in opened:
        await store.close()


async def has(store: Store, table: str, event_id: str) -> bool:
    return bool(await store._rows(f"SELECT 1 FROM {table} WHERE id = ?", (event_id,)))


async def test_claim_is_true_once_and_survives_a_restart(open_store):
    store = await open_store()
    assert await store.claim(["wrap1", "rumor1"])
    assert not await store.claim(["wrap1", "rumor1"])
    assert not await store.claim(["wrap2", "rumor1"]), "a re-wrapped old rumor is a replay"
    assert await has(store, "seen", "wrap2"), "the new wrap id is remembered even so"
    await store.close()
    reopened = await open_store()
    assert not await reopened.claim(["wrap1"])
    assert await reopened.claim(["wrap3"])


async def test_prune_forgets_only_old_ids(open_store):
    store = await open_store()
    now = time.time()
    await store.claim(["old"], now=now - 1000)
    await store.claim(["new"], now=now)
    assert await store.prune(older_than=500, now=now) == 1
    assert await store.known(["old", "new", "other"]) == {"new"}


async def test_wal_mode_and_private_directory(tmp_path):
    store = SqliteStore(tmp_path / "sub" / "s.sqlite3")
    mode = store._db.execute("PRAGMA journal_mode").fetchone()[0]
    assert mode == "wal"
    assert stat.S_IMODE((tmp_path / "sub").stat().st_mode) == 0o700


async def test_audit_redacts_and_lists_newest_first(open_store):
    store = await open_store()
    nsec = nsec_encode(generate_secret())
    await store.audit(
        controller="aa",
        transport="nip17",
        request_id="1",
        tool="open",
        params={"url": "http://x"},
        outcome="ok",
        duration_ms=1.5,
    )
    await store.audit(
        controller="aa",
        transport="local",
        request_id="2",
        tool="login",
        params={"method": "local", "nsec": nsec, "note": f"key {nsec}"},
        outcome="ok",
        duration_ms=2.0,
    )
    recent = await store.recent(10)
    assert [e.request_id for e in recent] == ["2", "1"]
    assert recent[0].params == {"method": "local", "nsec": REDACTED, "note": f"key {REDACTED}"}
    assert nsec not in json.dumps(await store._rows("SELECT params FROM audit"))
    assert await store.counts() == {"seen_ids": 0, "rejected_ids": 0, "commands": 2}
    json.dumps([e.to_dict() for e in recent])


def test_redact_typed_text_secret_keys_and_bunker_urls():
    # Whether a field is a password is only known after the tool ran: typed text never shows.
    assert redact({"ref": "@e3", "value": "hunter2"}) == {"ref": "@e3", "value": "[7 chars]"}
    assert redact({"text": "hunter2", "secret": True}) == {"text": "[7 chars]", "secret": True}
    assert redact({"url": "http://x", "count": 3}) == {"url": "http://x", "count": 3}
    assert redact({"bunker_url": "bunker://ab?secret=s"})["bunker_url"] == REDACTED
    assert redact(["x", {"mnemonic": "abandon " * 12}]) == ["x", {"mnemonic": REDACTED}]
    assert redact({"commands": [{"tool": "fill", "params": {"value": "pw"}}]}) == {
        "commands": [{"tool": "fill", "params": {"value": "[2 chars]"}}]
    }
    assert redact({"url": "http://x/?k=" + "ab" * 32}) == {"url": f"http://x/?k={REDACTED}"}


@pytest.mark.parametrize(
    "key", ["totp", "otp", "otp_code", "otpCode", "pin", "PIN", "mfa_code", "passcode", "apiKey"]
)
def test_params_named_like_one_time_codes_and_pins_are_secrets(key):
    assert redact({key: "492817"}) == {key: REDACTED}


@pytest.mark.parametrize("key", ["footprint", "spinner", "pinned", "compass", "option", "url"])
def test_words_that_merely_contain_otp_or_pin_are_not(key):
    assert redact({key: "492817"}) == {key: "492817"}


async def test_rejected_ids_survive_a_restart_and_every_table_is_bounded(open_store):
    store = await open_store()
    now = time.time()
    for i in range(10):
        await store.reject(f"wrap{i}", now=now - 100 + i)
    await store.reject("ancient", now=now - 10_000)
    await store.claim(["seen"], now=now - 10_000)
    for i in range(5):
        await store.audit(
            controller="aa",
            transport="nip17",
            request_id=str(i),
            tool="get_url",
            params={},
            outcome="ok",
            duration_ms=1.0,
        )
    await store.close()
    store = await open_store()
    assert await has(store, "rejected", "wrap3") and not await has(store, "seen", "wrap3")
    assert await store.known(["wrap3", "seen", "nothing"]) == {"wrap3", "seen"}
    assert await store.prune(older_than=5000, now=now) == 2, "the ancient rejected id and seen id"
    assert await store.trim(max_rejected=4, audit_age=3600, max_audit=3) == 6 + 2
    assert sorted(await store.known(f"wrap{i}" for i in range(10))) == [
        "wrap6",
        "wrap7",
        "wrap8",
        "wrap9",
    ]
    assert [e.request_id for e in await store.recent(10)] == ["4", "3", "2"]
    later = time.time() + 7200
    assert await store.trim(max_rejected=4, audit_age=3600, max_audit=3, now=later) == 3, (
        "old ones go"
    )
    assert await store.counts() == {"seen_ids": 0, "rejected_ids": 4, "commands": 0}


def test_one_redaction_walks_every_nested_command():
    text_batch = json.dumps(
        [
            {"tool": "fill", "params": {"ref": "@e1", "value": "hunter2", "secret": True}},
            {"tool": "fill", "params": {"ref": "@e2", "value": "DE89 3704 0044 0532 0130 00"}},
            {"tool": "set_headers", "params": {"headers": {"Authorization": "Bearer abc.def"}}},
            {"tool": "cookies_set", "params": {"name": "sid", "value": "s3ss10n"}},
        ]
    )
    logged = json.dumps(redact({"commands": text_batch}))
    for secret in ("hunter2", "abc.def", "s3ss10n", "DE89"):
        assert secret not in logged, secret
    assert "Authorization" in logged and "[7 chars]" in logged
    # the text grammar's set_headers carries its headers as JSON text too
    headers = redact({"headers": '{"X-Api-Key": "k-123", "X-Team": "blue"}'})
    assert headers == {"headers": {"X-Api-Key": REDACTED, "X-Team": "blue"}}
    assert redact({"headers": {"Proxy-Authorization": "Basic eA=="}})["headers"] == {
        "Proxy-Authorization": REDACTED
    }
    assert redact({"commands": "[{not json hunter2"}) == {"commands": "[18 chars, not JSON]"}
    # an approver sees what will be typed, except what the command marks secret
    shown = json.dumps(redact({"commands": text_batch}, show_typed=True))
    assert "DE89 3704 0044 0532 0130 00" in shown and "s3ss10n" in shown
    assert "hunter2" not in shown and "abc.def" not in shown
    assert redact({"value": "x", "secret": True}, show_typed=True) == {
        "value": "[1 chars]",
        "secret": True,
    }


async def test_held_commands_and_conversations_survive_a_restart(open_store):
    store = await open_store()
    for n in (1, 2):
        await store.hold(
            outer_id=f"wrap{n}",
            event_id=f"rumor{n}",
            sender="aa",
            scheme="nip17",
            request_id={"n": n},
            text=n == 2,
            tool="open",
        )
    await store.mark_running("wrap1")
    await store.hold(
        outer_id="wrap2",
        event_id="rumor2",
        sender="aa",
        scheme="nip04",
        request_id="again",
        text=False,
        tool="click",
    )
    await store.save_conversation("aa", [{"role": "user", "content": "hi"}])
    await store.save_conversation("aa", [{"role": "user", "content": "hi again"}])
    await store.close()
    store = await open_store()
    held = await store.unanswered()
    assert [(h.outer_id, h.running, h.request_id, h.scheme, h.text) for h in held] == [
        ("wrap1", True, {"n": 1}, "nip17", False),
        ("wrap2", False, "again", "nip04", False),
    ], "held again: replaced, not running, oldest first by its newest hold"
    await store.release("wrap1")
    assert [h.outer_id for h in await store.unanswered()] == ["wrap2"]
    assert await store.conversation("aa") == [{"role": "user", "content": "hi again"}]
    await store.forget_conversation("aa")
    assert await store.conversation("aa") == [] and await store.conversation("bb") == []


async def test_two_workers_racing_claim_every_id_exactly_once(open_store):
    """Two stores on one database (two workers) claiming every id at the same time, each on
    its own connection (on PostgreSQL the two statements meet in the server)."""
    ids = [f"rumor{i}" for i in range(300)]
    workers = [await open_store(), await open_store()]
    won: Counter[str] = Counter()
    for i, rumor in enumerate(ids):
        claims = [w.claim([f"wrap{i}-{n}", rumor]) for n, w in enumerate(workers)]
        for fresh in await asyncio.gather(*claims):
            won[rumor] += fresh
    assert sorted(won) == sorted(ids) and set(won.values()) == {1}, "each id claimed once"
    assert (await workers[0].counts())["seen_ids"] == len(ids) * 3


async def test_the_same_ids_in_other_orders_never_deadlock(open_store):
    """The inbox claims a set {wrap, rumor}, whose order differs between processes.  Two
    workers inserting the same rows in opposite orders wait on each other, and PostgreSQL's
    deadlock detector fails one (UNAVAILABLE: that worker answered a command the other ran,
    seen in make bench).  The claim inserts in one order: one winner a round, no error."""
    workers = [await open_store(), await open_store()]
    for i in range(300):
        pair = [f"wrap{i}", f"rumor{i}"]
        won = await asyncio.gather(workers[0].claim(pair), workers[1].claim(pair[::-1]))
        assert sorted(won) == [False, True], (i, won)


async def test_migrations_are_recorded_and_a_newer_schema_is_refused(open_store):
    store = await open_store()
    assert (await store._rows("SELECT max(version) FROM schema_version"))[0][0] >= 1
    await (await open_store()).close()  # opening again migrates nothing
    assert (await store._rows("SELECT count(*) FROM schema_version"))[0][0] == len(
        await store._rows("SELECT version FROM schema_version GROUP BY version")
    )
    await store._execute("INSERT INTO schema_version (version) VALUES (999)")
    with pytest.raises(BrowserdError, match="schema version 999"):
        await open_store()


async def test_the_database_url_is_checked_and_its_password_never_shown(tmp_path, postgres_dsn):
    from nostr_browserd.daemon.store.postgres import PostgresStore, describe
    from tests.fixtures.relays import free_port

    config = tmp_path / "c.toml"
    config.write_text('[state]\ndatabase = "mysql://u:s3cr3t-pw@db/x"\n')
    with pytest.raises(ConfigError, match=r"state\.database") as refused:
        load_config(config, {})
    assert "s3cr3t-pw" not in str(refused.value)
    config.write_text('[state]\ndatabase = "postgresql://u:s3cr3t-pw@db:5432/x?sslmode"\n')
    with pytest.raises(ConfigError, match=r"state\.database") as refused:
        load_config(config, {})
    assert "s3cr3t-pw" not in str(refused.value)
    url = "postgresql://u:s3cr3t-pw@127.0.0.1:5432/x"
    config.write_text(f'[state]\ndatabase = "{url}"\n')
    assert load_config(config, {}).state.database == url
    assert describe(url) == "postgresql://u@127.0.0.1:5432/x"
    nobody = f"postgresql://u:s3cr3t-pw@127.0.0.1:{free_port()}/x"
    with pytest.raises(BrowserdError, match="cannot be reached") as unreachable:
        await PostgresStore.connect(nobody, wait=1.0)
    assert "s3cr3t-pw" not in unreachable.value.message
    assert f"u@127.0.0.1:{nobody.rsplit(':', 1)[1]}" in unreachable.value.message


async def test_saved_states_are_per_owner_replaced_and_survive_a_restart(open_store):
    store = await open_store()
    work = {"cookies": [{"name": "sid", "value": "s1"}], "origins": []}
    await store.save_state("alice", "work", work)
    await store.save_state("alice", "work", {**work, "origins": [{"origin": "https://x"}]})
    await store.save_state("alice", ".session", {"cookies": [], "origins": []})
    await store.save_state("bob", "home", {"cookies": [], "origins": []})
    await store.close()
    store = await open_store()  # a restart, or another worker on the same database
    assert (await store.load_state("alice", "work"))["origins"] == [{"origin": "https://x"}]
    assert await store.load_state("bob", "work") is None, "never another owner's"
    assert await store.state_names("alice") == [".session", "work"]
    assert await store.state_names("carol") == []
    await store._execute("UPDATE saved_state SET state = ? WHERE name = ?", ("{not json", "home"))
    assert await store.load_state("bob", "home") is None, "unreadable is none, not a crash"


async def test_vault_rows_are_per_owner_replaced_removed_and_survive_a_restart(open_store):
    store = await open_store()
    sealed = {"to": "ab" * 32, "nip44": "sealed-1"}
    await store.vault_put("alice", VaultRow("site", ["https://a.example"], False, sealed))
    await store.vault_put("alice", VaultRow("site", ["https://b.example"], True, sealed))
    await store.vault_put("alice", VaultRow("mail", ["https://m.example"], False, sealed))
    await store.vault_put("bob", VaultRow("bank", ["https://bank.example"], False, sealed))
    await store.close()
    store = await open_store()  # a restart, or another worker on the same database
    rows = await store.vault_rows("alice")
    assert [(r.name, r.origins, r.totp) for r in rows] == [
        ("mail", ["https://m.example"], False),
        ("site", ["https://b.example"], True),
    ]
    assert rows[1].sealed == sealed
    assert await store.vault_rows("bob", "site") == [], "never another owner's"
    assert await store.vault_remove("bob", "site") is False
    assert await store.vault_remove("alice", "site") is True
    assert [r.name for r in await store.vault_rows("alice")] == ["mail"]
    await store._execute("UPDATE vault SET sealed = ? WHERE owner = ?", ("{not json", "bob"))
    assert await store.vault_rows("bob") == [], "unreadable is none, not a crash"


async def test_state_files_of_older_releases_move_into_the_store_once(open_store, tmp_path):
    from nostr_browserd.daemon.store.state_files import import_state_files

    store = await open_store()
    base = tmp_path / "browser"
    (base / "alice").mkdir(parents=True)
    (base / "alice" / "work.json").write_text(json.dumps({"cookies": [1], "origins": []}))
    (base / "alice" / "newer.json").write_text(json.dumps({"cookies": ["file"], "origins": []}))
    (base / "alice" / "broken.json").write_text("{not json")
    (base / "alice" / "notes.txt").write_text("not a state")
    await store.save_state("alice", "newer", {"cookies": ["store"], "origins": []})
    assert await import_state_files(base, store) == 2
    assert (await store.load_state("alice", "work"))["cookies"] == [1]
    assert (await store.load_state("alice", "newer"))["cookies"] == ["store"], "the store's wins"
    assert sorted(p.name for p in (base / "alice").iterdir()) == ["broken.json", "notes.txt"]
    assert await import_state_files(base, store) == 0, "once"
    assert await import_state_files(tmp_path / "nothing", store) == 0


async def test_an_approval_names_its_worker_until_decided_or_expired(open_store):
    first, second = await open_store(), await open_store()  # two workers, one database
    ask = {"controller": "cc", "approver": "aa", "tool": "click", "expires_in": 120}
    assert await first.hold_approval("K7P2QX", worker="w1", **ask)
    assert not await second.hold_approval("K7P2QX", worker="w2", **ask), "the code is taken"
    assert await second.approval_holder("K7P2QX") == "w1"
    assert await second.approval_holder("NOSUCH") is None
    assert await second.approvals() == [
        {
            "worker": "w1",
            "controller": "cc",
            "approver": "aa",
            "tool": "click",
            "at": pytest.approx(time.time(), abs=60),
            "expires": pytest.approx(time.time() + 120, abs=60),
        }
    ], "who asks whom about what, never the code"
    await first.drop_approval("K7P2QX")
    assert await second.approval_holder("K7P2QX") is None and await second.approvals() == []
    # A killed worker's approval: forgotten once it expires, and its code free again.
    assert await first.hold_approval("DEAD22", worker="w1", **{**ask, "expires_in": -1})
    assert await second.approval_holder("DEAD22") is None and await second.approvals() == []
    assert await second.hold_approval("DEAD22", worker="w2", **ask)
    assert await first.approval_holder("DEAD22") == "w2"
    await second.hold_approval("OLD333", worker="w2", **{**ask, "expires_in": -10_000})
    assert await first.prune(older_than=5000) == 1, "an approval long expired is pruned"
    assert await first.approval_holder("DEAD22") == "w2"


# --- workers and controller leases (daemon/store/leases.py) ----------------------------------


async def test_a_lease_is_one_workers_until_it_expires_or_is_released(open_store):
    store, other = await open_store(), await open_store()
    assert await store.take_lease("ctl", "w1", 30)
    assert await store.take_lease("ctl", "w1", 30), "renewing is taking it again"
    assert not await other.take_lease("ctl", "w2", 30), "held by w1"
    await store.release_lease("ctl", "w2")  # not w2's: nothing happens
    assert not await other.take_lease("ctl", "w2", 30)
    await store.release_lease("ctl", "w1")
    assert await other.take_lease("ctl", "w2", 0.2), "released: free at once"
    assert [(lease.controller, lease.worker) for lease in await store.leases()] == [("ctl", "w2")]
    await asyncio.sleep(0.3)  # the database's clock moves on: the lease expires
    assert await store.take_lease("ctl", "w1", 30)
    assert await store.renew_leases("w2", 30) == set(), "w2 lost it: renewing says so"
    assert await store.renew_leases("w1", 30) == {"ctl"}


async def test_a_restarted_worker_takes_its_own_lease_back_at_once(open_store):
    store = await open_store()
    assert await store.take_lease("ctl", "w1", 3600)
    await store.close()
    restarted = await open_store()
    assert await restarted.take_lease("ctl", "w1", 3600), "same name: no wait for the expiry"
    assert not await restarted.take_lease("ctl", "w2", 3600)


async def test_racing_workers_lease_each_controller_to_exactly_one(open_store):
    stores = [await open_store() for _ in range(4)]
    controllers = [f"c{i}" for i in range(25)]

    async def race(n: int) -> list[str]:
        return [c for c in controllers if await stores[n].take_lease(c, f"w{n}", 30)]

    won = await asyncio.gather(*(race(n) for n in range(4)))
    taken = Counter(c for got in won for c in got)
    assert set(taken) == set(controllers) and set(taken.values()) == {1}


async def test_worker_rows_heartbeat_drain_and_load(open_store):
    store = await open_store()
    assert await store.worker_up("w1", "first", silent_for=30)
    assert await store.worker_up("w2", "x", silent_for=30)
    assert await store.live_workers(30) == ["w1", "w2"]
    assert await store.heartbeat("w1", "first", running=2, queued=3, contexts=4)
    await store.take_lease("ctl", "w1", 30)
    row = {w.name: w for w in await store.workers()}["w1"]
    assert (row.running, row.queued, row.contexts, row.leases) == (2, 3, 4, 1)
    assert row.heartbeat_age < 30
    assert await store.worker_instance("w1") == "first"
    assert not await store.worker_up("w1", "second", silent_for=30), "first is live"
    assert await store.worker_up("w1", "second", silent_for=0), "first is silent"
    assert await store.worker_up("w1", "third", silent_for=30, dead="second"), "known dead"
    assert not await store.heartbeat("w1", "first", running=0, queued=0, contexts=0)
    await store.worker_gone("w1", "third")
    assert await store.worker_up("w1", "second", silent_for=30), "third stopped"
    assert not await store.heartbeat("w1", "first", running=0, queued=0, contexts=0)
    await store.set_draining("w2")
    assert await store.live_workers(30) == ["w1"], "a draining worker gets no new controller"
    await store.release_leases("w1")
    await store.worker_gone("w1", "second")
    assert await store.live_workers(30) == []
    assert {w.name: w.gone for w in await store.workers()} == {"w1": True, "w2": False}
    assert await store.leases() == []
    assert await store.forget_workers(3600) == 0, "both beat within the hour"
    await asyncio.sleep(0.2)
    assert await store.forget_workers(0.1) == 2


async def test_a_taken_over_controllers_held_commands_move_to_one_worker(open_store):
    store, other = await open_store(), await open_store()
    for n, sender in enumerate(["ctl", "ctl", "other"]):
        await store.hold(
            outer_id=f"o{n}",
            event_id=f"e{n}",
            sender=sender,
            scheme="nip17",
            request_id=n,
            text=False,
            tool="click",
            worker="w1",
        )
    await store.take_lease("ctl", "w1", 30)
    assert await store.start_held("o0", "ctl", "w1"), "w1 holds both: it may run it"
    assert await store.orphans("w2", silent_for=30) == ["other"], "ctl has a live lease"
    await store.release_lease("ctl", "w1")
    assert await store.worker_up("w1", "first", silent_for=30)
    assert await other.orphans("w2", silent_for=30) == [], "w1 is live: merely late"
    assert await other.take_lease("ctl", "w2", 30)
    assert await other.adopt_held("ctl", "w2", silent_for=30) == [], "w1 answers its own"
    assert sorted(await other.orphans("w2", silent_for=0)) == ["other"], "w1 is silent: dead"
    adopted = await other.adopt_held("ctl", "w2", silent_for=0)
    assert [(p.outer_id, p.request_id, p.running) for p in adopted] == [
        ("o0", 0, True),
        ("o1", 1, False),
    ], "oldest first, as they were"
    assert await other.adopt_held("ctl", "w2", silent_for=0) == [], "moved once"
    # the paused worker wakes: its rows are gone, so it neither runs nor answers them
    assert not await store.start_held("o1", "ctl", "w1")
    assert not await store.answering("o0", "w1")
    assert await other.answering("o0", "w2")
    assert [p.outer_id for p in await store.unanswered("w1")] == ["o2"]


async def test_kept_blobs_come_due_in_order_and_survive_a_restart(open_store):
    store = await open_store()
    assert await store.next_blob_due() is None
    await store.keep_blob("https://b.example", "bb" * 32, 200.0)
    await store.keep_blob("https://a.example", "aa" * 32, 100.0)
    await store.keep_blob("https://a.example", "aa" * 32, 150.0)  # uploaded again: the later time
    await store.close()
    reopened = await open_store()
    assert await reopened.next_blob_due() == 150.0
    assert await reopened.due_blobs(149.0) == []
    assert await reopened.due_blobs(300.0) == [
        ("https://a.example", "aa" * 32),
        ("https://b.example", "bb" * 32),
    ]
    await reopened.forget_blob("https://a.example", "aa" * 32)
    assert await reopened.due_blobs(300.0) == [("https://b.example", "bb" * 32)]


async def test_monitors_and_schedules_are_per_owner_numbered_and_survive_a_restart(open_store):
    store = await open_store()
    spec = {"url": "https://shop.example/item", "selector": ".price"}
    first = await store.watch_add("monitor", "alice", spec, {"text": "10 €"}, 100.0)
    second = await store.watch_add("monitor", "alice", spec, {}, 200.0)
    theirs = await store.watch_add("monitor", "bob", spec, {}, 300.0)
    plan = await store.watch_add("schedule", "alice", {"command": "screenshot"}, {}, 400.0)
    assert (first, second, theirs, plan) == ("m1", "m2", "m1", "s1")
    assert await store.watch_count("alice") == 3 and await store.watch_count("bob") == 1
    assert await store.watch("monitor", "bob", "m2") is None  # not bob's
    row = await store.watch("monitor", "alice", "m1")
    assert row is not None and row.spec == spec and row.state == {"text": "10 €"}
    row.state, row.due = {"text": "12 €", "failures": 1}, 150.0
    assert await store.watch_save(row)
    assert not await store.watch_remove("monitor", "bob", "m2")
    assert await store.watch_remove("monitor", "alice", "m2")
    await store.close()
    reopened = await open_store()
    kept = await reopened.watches("monitor")
    assert [(r.owner, r.id, r.due) for r in kept] == [("alice", "m1", 150.0), ("bob", "m1", 300.0)]
    assert kept[0].state == {"text": "12 €", "failures": 1}
    assert [r.id for r in await reopened.watches("schedule", "alice")] == ["s1"]
    assert await reopened.watch_add("monitor", "alice", spec, {}, 1.0) == "m2"
    gone = await reopened.watch("monitor", "alice", "m2")
    assert gone is not None
    assert await reopened.watch_remove("monitor", "alice", "m1")
    assert not await reopened.watch_save(kept[0])  # removed meanwhile: not brought back
