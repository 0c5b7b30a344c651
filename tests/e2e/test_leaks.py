"""The suite's secrets scan (tests/fixtures/leaks.py) finds what it must and fails the run."""

from __future__ import annotations

import hashlib
import logging
import os
import sqlite3
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from nostr_browserd.nostr.nip19 import nsec_encode
from nostr_browserd.nostr.signer import KeySigner
from tests.fixtures.leaks import Leaks
from tests.fixtures.paths import REPO

SEED = "acoustic beach clinic dragon engine fossil guitar harbor island jungle kitchen lemon"
ROOT = REPO


def planted(tmp_path: Path) -> tuple[Leaks, KeySigner]:
    """A private registry and a key made outside ``generate_secret`` (so not in ``LEAKS``)."""
    leaks = Leaks()
    key = KeySigner(hashlib.sha256(str(tmp_path).encode()).digest())
    leaks.key(key.secret, "key")
    leaks.secret("typed-password-1", "password")
    leaks.seed(SEED, "seed")
    return leaks, key


def test_finds_a_key_as_hex_or_nsec_a_password_and_a_seed_run(tmp_path) -> None:
    leaks, key = planted(tmp_path)
    assert leaks.find(f"x={key.secret.hex().upper()}!".encode()) == {"key"}
    assert leaks.find(f"'{nsec_encode(key.secret)}'".encode()) == {"key"}
    assert leaks.find(b"sig " + b"ab" * 10 + key.secret.hex().encode() + b"cd" * 22) == {"key"}
    assert leaks.find(b'{"value": "typed-password-1"}') == {"password"}
    assert leaks.find(b"words: Engine,\nfossil  GUITAR") == {"seed"}
    # One or two words of a seed are everyday words, not a leak.
    assert leaks.find(b"an engine and a fossil; clinic dragon") == set()
    assert leaks.find(b"typed-password-") == set() and leaks.find(key.pubkey.encode()) == set()


@pytest.fixture
def outside() -> Iterator[Path]:
    """A directory outside pytest's basetemp: what is planted here is not the suite's leak."""
    with tempfile.TemporaryDirectory(prefix="leaks-test-") as path:
        yield Path(path)


def test_scans_logs_sqlite_and_outputs_and_skips_the_key_file(outside) -> None:
    tmp_path = outside
    leaks, key = planted(tmp_path)
    state = tmp_path / "state"
    state.mkdir()
    (state / "daemon.log").write_text("INFO fine\n" * 100_000 + "DEBUG oops typed-password-1\n")
    with sqlite3.connect(state / "audit.sqlite3") as db:
        db.execute("create table audit (params text)")
        db.execute("insert into audit values (?)", (f"nsec {nsec_encode(key.secret)}",))
    (state / "key.nsec").write_text(nsec_encode(key.secret) + "\n")  # the input: held by design
    (state / "seed").write_text(SEED + "\n")
    leaks.output("reply: acoustic beach clinic", "a reply")
    hits = {(h.what, Path(h.where).name) for h in leaks.scan([tmp_path], [("t: stdout", "ok")])}
    assert hits == {("password", "daemon.log"), ("key", "audit.sqlite3"), ("seed", "a reply")}


def test_what_an_owner_only_file_holds_is_a_secret_everywhere_else(outside) -> None:
    """A daemon in a subprocess wrote its key and token: the scan learns them from the files."""
    tmp_path = outside
    leaks = Leaks()
    key = KeySigner(hashlib.sha256(b"subprocess daemon").digest())
    state = tmp_path / "state"
    state.mkdir()
    for name, text, mode in [
        ("identity.nsec", nsec_encode(key.secret), 0o600),
        ("local.token", "tok-0123456789abcdef", 0o600),
        ("seed", SEED, 0o600),
        ("notes.txt", "just-a-public-line", 0o644),
    ]:
        (state / name).write_text(text + "\n")
        (state / name).chmod(mode)
    (state / "daemon.err").write_text(
        f"{key.secret.hex()} tok-0123456789abcdef fossil guitar harbor"
    )
    (state / "other.log").write_text("just-a-public-line")
    hits = {(h.what, Path(h.where).name) for h in leaks.scan([tmp_path], [])}
    assert hits == {
        ("the key in identity.nsec", "daemon.err"),
        ("the secret in local.token", "daemon.err"),
        ("the seed in seed", "daemon.err"),
    }


def test_a_hit_in_an_output_shows_where_with_the_secret_masked() -> None:
    leaks = Leaks()
    leaks.secret("typed-password-1", "password")
    (hit,) = leaks.scan([], [("t: Captured log call", "DEBUG > Authorization: typed-password-1")])
    assert hit.around == "DEBUG > Authorization: <SECRET>"


def test_a_short_secret_is_refused() -> None:
    with pytest.raises(ValueError, match="by chance"):
        Leaks().secret("abc", "too short")


@pytest.mark.skipif(os.environ.get("LEAK_PLANT") != "1", reason="run by the test below")
def test_planted_leak() -> None:
    """Logs a secret the suite generated: the run that includes it must fail."""
    key = KeySigner.generate()
    logging.getLogger("nostr_browserd.planted").debug("oops %s", key.secret.hex())


def test_a_leak_fails_the_run(tmp_path) -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "--basetemp",
            str(tmp_path / "run"),
            f"{__file__}::test_planted_leak",
        ],
        cwd=ROOT,
        env={**os.environ, "LEAK_PLANT": "1"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert "1 passed" in proc.stdout, proc.stdout + proc.stderr
    assert proc.returncode == pytest.ExitCode.TESTS_FAILED, proc.stdout
    assert "secrets scan: " in proc.stdout and " hit(s)" in proc.stdout
    assert "a generated secret key in " in proc.stdout and "nostr_browserd.log" in proc.stdout
    assert "test_planted_leak: Captured log call" in proc.stdout
