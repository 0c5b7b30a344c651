"""The CLI's own parts: keygen, the bunker subcommand's delegation, status with no daemon."""

import asyncio
import stat
import subprocess
import sys
from pathlib import Path

from nostr_browserd.cli.main import main
from nostr_browserd.daemon.store import SqliteStore
from nostr_browserd.login.nsec import signer_from_file
from nostr_browserd.nostr.nip19 import npub_encode

CLI = [str(Path(sys.executable).with_name("nostr-browserd"))]


def test_keygen_writes_an_owner_only_key_and_prints_its_npub(tmp_path, capsys):
    path = tmp_path / "keys" / "controller.nsec"
    assert main(["keygen", str(path)]) == 0
    out = capsys.readouterr()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert out.out.strip() == npub_encode(signer_from_file(path).pubkey)
    assert "nsec1" not in out.out + out.err
    assert main(["keygen", str(path)]) == 2, "never overwrite a key"


def test_status_without_a_daemon_says_so_and_shows_the_audit(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("NOSTR_BROWSERD_STATE_DIR", str(tmp_path))
    monkeypatch.setenv("NOSTR_BROWSERD_LOCAL_PORT", "1")

    async def audit_two() -> None:  # main() runs its own event loop: this test has none
        store = SqliteStore(tmp_path / "state.sqlite3")
        for tool, outcome in [("open", "ok"), ("click", "ELEMENT_NOT_FOUND")]:
            await store.audit(
                controller="ab" * 32,
                transport="nip17",
                request_id="r",
                tool=tool,
                params={},
                outcome=outcome,
                duration_ms=12.0,
            )
        await store.close()

    asyncio.run(audit_two())
    assert main(["status"]) == 3
    out = capsys.readouterr().out
    assert "not running" in out and "recent commands:" in out
    lines = [line.split()[2:] for line in out.splitlines() if line.startswith("  ")]
    assert lines == [
        ["abababababab", "nip17", "click", "->", "ELEMENT_NOT_FOUND", "12", "ms"],
        ["abababababab", "nip17", "open", "->", "ok", "12", "ms"],
    ], out


def test_status_without_a_daemon_lists_the_workers_their_load_and_leases(
    tmp_path, capsys, monkeypatch
):
    """Other workers may be running on the same store while this one is stopped."""
    monkeypatch.setenv("NOSTR_BROWSERD_STATE_DIR", str(tmp_path))
    monkeypatch.setenv("NOSTR_BROWSERD_LOCAL_PORT", "1")
    controller = "cd" * 32

    async def two_workers() -> None:
        store = SqliteStore(tmp_path / "state.sqlite3")
        await store.worker_up("w1", "i1", silent_for=60)
        await store.heartbeat("w1", "i1", running=1, queued=2, contexts=3)
        await store.take_lease(controller, "w1", 60)
        await store.worker_up("w2", "i2", silent_for=60)
        await store.set_draining("w2")
        await store.close()

    asyncio.run(two_workers())
    assert main(["status"]) == 3
    out = capsys.readouterr().out
    assert "w1: heartbeat" in out and "1 running, 2 queued, 3 contexts, 1 leases" in out
    assert "w2: draining; 0 running, 0 queued, 0 contexts, 0 leases" in out
    lease = next(line for line in out.splitlines() if "-> w1" in line)
    assert lease.strip().startswith(npub_encode(controller)[:24]) and "expires in" in lease


def test_config_errors_exit_with_usage_and_name_the_key(tmp_path, capsys):
    bad = tmp_path / "bad.toml"
    bad.write_text("[browser]\nisolation = 'nope'\n")
    assert main(["run", "--config", str(bad)]) == 2
    assert "browser.isolation" in capsys.readouterr().err


def test_send_refuses_a_world_readable_key_before_sending(tmp_path, capsys):
    key = tmp_path / "k.nsec"
    main(["keygen", str(key)])
    key.chmod(0o644)
    code = main(["send", "--to", npub_encode("ab" * 32), "--key", str(key), "get", "url"])
    assert code == 2 and "k.nsec" in capsys.readouterr().err


def test_bunker_is_the_login_layers_signer():
    proc = subprocess.run(
        [*CLI, "bunker", "--help"], capture_output=True, text=True, timeout=60, check=False
    )
    assert proc.returncode == 0 and "bunker" in proc.stdout
