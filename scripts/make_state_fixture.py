"""Write tests/fixtures/state-0.1.0/: a state directory as nostr-browserd 0.1.0 left it.

Run once, with the 0.1.0 code (commit 16d5fc6) on the path, never with today's:

    git worktree add /tmp/v010 16d5fc6
    PYTHONPATH=/tmp/v010/src .venv/bin/python scripts/make_state_fixture.py

Everything is written through 0.1.0's own APIs (its store, vault and key store), so the
fixture is what an operator upgrading from 0.1.0 has on disk.  Its key (``identity.nsec``) is
a throwaway test key made here, for the migration test (tests/e2e/test_upgrade_0_1_0.py) only.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

import nostr_browserd
from nostr_browserd.agent.keys import KeyStore
from nostr_browserd.daemon.keyfile import write_new_key
from nostr_browserd.daemon.store import SqliteStore
from nostr_browserd.login.nsec import signer_from_file
from nostr_browserd.vault.entry import Entry
from nostr_browserd.vault.keeper import Vault

HERE = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "state-0.1.0"
OWNER = "a1" * 32  # the controller whose vault, state and conversation these are
SEEN = [f"{n:064x}" for n in (1, 2, 3)]
COOKIE = "fixture-session-7d1c0e5b"  # the saved state's cookie value, which must end sealed
STATE = {
    "cookies": [
        {
            "name": "session",
            "value": COOKIE,
            "domain": "127.0.0.1",
            "path": "/",
            "expires": -1,
            "httpOnly": True,
            "secure": False,
            "sameSite": "Lax",
        }
    ],
    "origins": [
        {"origin": "http://127.0.0.1", "localStorage": [{"name": "token", "value": COOKIE}]}
    ],
}


async def main() -> None:
    if "/v010/" not in nostr_browserd.__file__:
        sys.exit(f"run with the 0.1.0 code on PYTHONPATH, not {nostr_browserd.__file__}")
    HERE.mkdir(parents=True, exist_ok=True, mode=0o700)
    key = HERE / "identity.nsec"
    key.unlink(missing_ok=True)
    write_new_key(key)
    signer = signer_from_file(key)
    for leftover in HERE.glob("state.sqlite3*"):
        leftover.unlink()
    store = SqliteStore(HERE / "state.sqlite3")
    await store.claim(SEEN)
    vault = Vault(store, lambda: signer)
    entry = Entry.checked("shop", "https://shop.example", "ada@example.org", "fixture-pw-0.1.0")
    await vault.add(OWNER, entry)
    await store.save_state(OWNER, "work", STATE)
    await store.save_conversation(OWNER, [{"role": "user", "content": f"remember {COOKIE}"}])
    await KeyStore(HERE, signer).set("anthropic", "sk-fixture-0.1.0")
    await store.close()
    for path in HERE.iterdir():
        os.chmod(path, 0o600)
    print(json.dumps({"dir": str(HERE), "files": sorted(p.name for p in HERE.iterdir())}))


asyncio.run(main())
