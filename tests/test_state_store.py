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
    assert store.counts() == {"seen_ids": 0, "commands": 2}
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
