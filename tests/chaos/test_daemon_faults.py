"""The daemon killed mid-command, and its state directory's disk full.

``kill -9`` while a command runs: after the restart that command is answered ``INTERRUPTED``
(it may have been partly done; it is not run again) and the one queued behind it is answered as
not run; neither ever runs twice.  A full disk: the command that cannot be recorded is refused
with a clear error, the daemon keeps serving, and the state file is whole once space is back.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import subprocess
from pathlib import Path

import pytest

from nostr_browserd.errors import ErrorCode
from nostr_browserd.nostr.nip19 import parse_pubkey
from tests.e2e.test_cli import DaemonProcess, is_running
from tests.e2e.test_resilience import chromium_main_processes
from tests.fixtures.daemon import SdkController, daemon_pubkey, start_daemon_fixture  # noqa: F401


def held(state: Path) -> dict[str, int]:
    """The state file's pending commands (request id → running) as another reader sees them."""
    path = state / "state.sqlite3"
    if not path.exists():
        return {}
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return dict(db.execute("SELECT request_id, running FROM pending").fetchall())
    except sqlite3.OperationalError:  # not created yet
        return {}
    finally:
        db.close()


def audited(state: Path) -> list[tuple[str, str]]:
    db = sqlite3.connect(state / "state.sqlite3")
    try:
        return db.execute("SELECT request_id, outcome FROM audit").fetchall()
    finally:
        db.close()


@pytest.mark.timeout(170)
async def test_kill_9_mid_command_is_answered_after_the_restart_and_never_run_twice(
    nostr_relay_url, tmp_path
):
    async with SdkController([nostr_relay_url]) as phone:
        env = {
            "NOSTR_BROWSERD_NOSTR_RELAYS": f'["{nostr_relay_url}"]',
            "NOSTR_BROWSERD_NOSTR_EMBEDDED_RELAY": "false",
            "NOSTR_BROWSERD_NOSTR_CONTROLLERS": phone.npub,
        }
        state = tmp_path / "state"
        first = DaemonProcess(tmp_path, env)
        try:
            await first.wait_for("Send it a command")
            me = parse_pubkey(first.npub)
            await phone.send(me, '{"id": "slow", "tool": "wait", "params": {"ms": 60000}}')
            await phone.send(me, '{"id": "queued", "tool": "get_url"}')
            async with asyncio.timeout(60):  # the first runs, the second waits behind it
                while held(state) != {'"slow"': 1, '"queued"': 0}:
                    await asyncio.sleep(0.05)
            browsers = chromium_main_processes(first.proc.pid)
            first.proc.send_signal(signal.SIGKILL)
            assert first.proc.wait(30) == -signal.SIGKILL
        finally:
            if first.proc.poll() is None:
                first.proc.kill()
        for pid in browsers:  # the killed daemon could not close its browser
            if is_running(pid):
                os.kill(pid, signal.SIGKILL)

        second = DaemonProcess(tmp_path, env)
        try:
            await second.wait_for("Send it a command")
            answers = {}
            async with asyncio.timeout(60):
                while len(answers) < 2:
                    for reply in await phone.poll():
                        answers[reply.json["id"]] = reply.json
                    await asyncio.sleep(0.05)
            assert answers["slow"]["error"]["code"] == ErrorCode.INTERRUPTED
            assert "not run again" in answers["slow"]["error"]["message"]
            assert answers["queued"]["error"]["code"] == ErrorCode.UNAVAILABLE
            assert "was not run" in answers["queued"]["error"]["message"]
            # The relay delivers both commands again to the new daemon: they stay claimed.
            fresh = await phone.command(me, {"tool": "get_url"})
            assert fresh["success"], fresh
            assert held(state) == {}
        finally:
            assert second.stop() == 0
        outcomes = audited(state)
        assert ("slow", "INTERRUPTED") in outcomes and ("queued", "UNAVAILABLE") in outcomes
        assert not [o for o in outcomes if o[0] in ("slow", "queued") and o[1] == "ok"]
        assert sum(1 for o in outcomes if o[0] == "slow") == 1, "answered once"


@pytest.fixture
def small_disk(tmp_path):
    """A 2 MiB tmpfs (root only): a real full disk, not a simulated one."""
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=2m,mode=0700", "tmpfs", str(mount)],
        capture_output=True,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def fill(disk: Path) -> Path:
    """Write until the disk is full; returns the filler file."""
    filler = disk / "filler"
    # Unbuffered: a write the full disk refused leaves nothing behind for close() to retry.
    with filler.open("wb", buffering=0) as out:
        try:
            while True:
                out.write(b"\0" * 65536)
                out.flush()
        except OSError:
            pass
    return filler


async def test_a_full_state_disk_refuses_clearly_and_corrupts_nothing(
    nostr_relay_url, start_daemon, small_disk, tmp_path
):
    async with SdkController([nostr_relay_url]) as phone:
        daemon = await start_daemon(
            [nostr_relay_url],
            controllers=[phone.npub],
            state_dir=small_disk / "state",
            browser={
                "state_dir": str(tmp_path / "browser"),
                "downloads_dir": str(tmp_path / "downloads"),
                "uploads_dir": str(tmp_path / "uploads"),
            },
        )
        me = await daemon_pubkey(daemon)
        filler = fill(small_disk)
        refused = await phone.command(me, {"tool": "get_url"})
        assert refused["error"]["code"] == ErrorCode.UNAVAILABLE, refused
        assert "cannot be written" in refused["error"]["message"]
        assert "free some space" in refused["error"]["message"]
        filler.unlink()
        served = await phone.command(me, {"tool": "get_url"})
        assert served["success"], served
        assert daemon.store is not None
        db = daemon.store._db
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        # the refused command's ids were claimed after all (once space was back): never run
        assert (await daemon.store.counts())["seen_ids"] >= 4
