"""Upgrading from 0.1.0: a state directory its code wrote opens with this version, intact.

The fixture (tests/fixtures/state-0.1.0/, made by scripts/make_state_fixture.py with the 0.1.0
code) holds a test-only identity, three seen ids, a vault entry, a saved state and an ``ask``
conversation in plaintext as 0.1.0 kept them, and an API key.  The daemon starts on a copy of
it: everything is found, and the saved state and conversation are sealed on disk.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from nostr_browserd.agent.keys import KeyStore
from nostr_browserd.vault.keeper import Vault
from tests.fixtures.daemon import daemon_pubkey, start_daemon_fixture  # noqa: F401
from tests.fixtures.plaintext import files_holding, rows_holding

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "state-0.1.0"
IDENTITY = "8b05a36aaad7320ae64aa38cf4e1f6955de9dd1666c00db224aec05f7baa6ac3"  # its test key
OWNER = "a1" * 32
SEEN = [f"{n:064x}" for n in (1, 2, 3)]
COOKIE = "fixture-session-7d1c0e5b"


def copy_of_fixture(state_dir: Path) -> None:
    """The fixture, as an operator's state directory: 0700, its files 0600."""
    shutil.copytree(FIXTURE, state_dir, ignore=shutil.ignore_patterns("README.md"))
    state_dir.chmod(0o700)
    for path in state_dir.iterdir():
        path.chmod(0o600)


async def test_a_state_directory_of_0_1_0_opens_intact_and_sealed(
    nostr_relay_url, start_daemon, tmp_path
):
    state_dir = tmp_path / "state"
    copy_of_fixture(state_dir)
    assert COOKIE.encode() in (state_dir / "state.sqlite3").read_bytes(), "0.1.0: plaintext"
    # The fixture's seen ids are as old as the fixture: kept past the default 3 days here, so
    # that the daemon's hourly prune (also run at start) does not forget them.
    daemon = await start_daemon([nostr_relay_url], state={"seen_retention": 100 * 365 * 86400.0})
    assert await daemon_pubkey(daemon) == IDENTITY, "its identity file is read"
    store = daemon.store
    assert store is not None
    assert await store.known(SEEN) == set(SEEN), "seen ids: a command seen then runs never"

    entry = await Vault(store, daemon.signer).open(OWNER, "shop")
    assert (entry.origins, entry.username) == (["https://shop.example"], "ada@example.org")
    assert entry.password == "fixture-pw-0.1.0"

    state = await store.load_state(OWNER, "work")
    assert state is not None and state["cookies"][0]["value"] == COOKIE
    assert state["origins"][0]["localStorage"] == [{"name": "token", "value": COOKIE}]
    transcript = await store.conversation(OWNER)
    assert transcript == [{"role": "user", "content": f"remember {COOKIE}"}]
    assert await KeyStore(state_dir, daemon.signer()).get("anthropic") == "sk-fixture-0.1.0"

    assert files_holding(state_dir, COOKIE) == [], "sealed on disk, no plaintext left behind"
    assert await rows_holding(store, COOKIE) == []
    [(text,)] = await store._rows("SELECT state FROM saved_state")
    assert set(json.loads(text)) == {"to", "nip44", "gcm"}
