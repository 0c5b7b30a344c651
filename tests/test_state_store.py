"""The replay guard and the audit log in SQLite."""

import json
import stat
import time

from nostr_browserd.daemon.store import Store
from nostr_browserd.nostr.keys import generate_secret
from nostr_browserd.nostr.nip19 import nsec_encode
from nostr_browserd.redact import REDACTED, redact


def test_claim_is_true_once_and_survives_a_restart(tmp_path):
    store = Store(tmp_path / "state.sqlite3")
    assert store.claim(["wrap1", "rumor1"])
    assert not store.claim(["wrap1", "rumor1"])
    assert not store.claim(["wrap2", "rumor1"]), "a re-wrapped old rumor is a replay"
    assert store.was_seen("wrap2"), "the new wrap id is remembered even so"
    store.close()
    reopened = Store(tmp_path / "state.sqlite3")
    assert not reopened.claim(["wrap1"])
    assert reopened.claim(["wrap3"])


def test_prune_forgets_only_old_ids(tmp_path):
    store = Store(tmp_path / "s.sqlite3")
    now = time.time()
    store.claim(["old"], now=now - 1000)
    store.claim(["new"], now=now)
    assert store.prune(older_than=500, now=now) == 1
    assert not store.was_seen("old") and store.was_seen("new")


def test_wal_mode_and_private_directory(tmp_path):
    store = Store(tmp_path / "sub" / "s.sqlite3")
    mode = store._db.execute("PRAGMA journal_mode").fetchone()[0]
    assert mode == "wal"
    assert stat.S_IMODE((tmp_path / "sub").stat().st_mode) == 0o700


def test_audit_redacts_and_lists_newest_first(tmp_path):
    store = Store(tmp_path / "s.sqlite3")
    nsec = nsec_encode(generate_secret())
    store.audit(
        controller="aa",
        transport="nip17",
        request_id="1",
        tool="open",
        params={"url": "http://x"},
        outcome="ok",
        duration_ms=1.5,
    )
    store.audit(
        controller="aa",
        transport="local",
        request_id="2",
        tool="login",
        params={"method": "local", "nsec": nsec, "note": f"key {nsec}"},
        outcome="ok",
        duration_ms=2.0,
    )
    recent = store.recent(10)
    assert [e.request_id for e in recent] == ["2", "1"]
    assert recent[0].params == {"method": "local", "nsec": REDACTED, "note": f"key {REDACTED}"}
    raw = (tmp_path / "s.sqlite3").read_bytes() + (tmp_path / "s.sqlite3-wal").read_bytes()
    assert nsec.encode() not in raw
    assert store.counts() == {"seen_ids": 0, "rejected_ids": 0, "commands": 2}
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


def test_rejected_ids_survive_a_restart_and_every_table_is_bounded(tmp_path):
    store = Store(tmp_path / "s.sqlite3")
    now = time.time()
    for i in range(10):
        store.reject(f"wrap{i}", now=now - 100 + i)
    store.reject("ancient", now=now - 10_000)
    store.claim(["seen"], now=now - 10_000)
    for i in range(5):
        store.audit(
            controller="aa",
            transport="nip17",
            request_id=str(i),
            tool="get_url",
            params={},
            outcome="ok",
            duration_ms=1.0,
        )
    store.close()
    store = Store(tmp_path / "s.sqlite3")
    assert store.was_rejected("wrap3") and not store.was_seen("wrap3")
    assert store.prune(older_than=5000, now=now) == 2, "the ancient rejected id and seen id"
    assert store.trim(max_rejected=4, audit_age=3600, max_audit=3) == 6 + 2
    assert [f"wrap{i}" for i in range(10) if store.was_rejected(f"wrap{i}")] == [
        "wrap6",
        "wrap7",
        "wrap8",
        "wrap9",
    ]
    assert [e.request_id for e in store.recent(10)] == ["4", "3", "2"]
    store._db.execute("UPDATE audit SET at = at - 7200")
    assert store.trim(max_rejected=4, audit_age=3600, max_audit=3) == 3, "old audit rows go"
    assert store.counts() == {"seen_ids": 0, "rejected_ids": 4, "commands": 0}


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
