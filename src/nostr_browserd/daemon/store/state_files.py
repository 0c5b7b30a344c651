"""What older releases kept in plaintext: sealed once the daemon's identity is in.

Releases before the state store kept each ``state_save`` as ``<browser.state_dir>/<owner>/
<name>.json``.  Once logged in at start, every such file is written into the store, sealed
(unless the store has a state of that name already: it is the newer one), and then removed, so
a state lives in one place, which on PostgreSQL every worker reaches.  A file that cannot be
read stays where it is, and the log says so.  Then the states and conversations that 0.1.0
kept in the store in plaintext are sealed in place (``SealedRows.seal_plaintext``).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

from ...browser.paths import NAME
from ...errors import BrowserdError
from .base import Store

log = logging.getLogger(__name__)


async def import_state_files(base: Path | None, store: Store) -> int:
    """Move ``base/<owner>/<name>.json`` into ``store``; returns how many were moved."""
    if base is None or not base.is_dir():
        return 0
    moved = 0
    for path in sorted(base.glob("*/*.json")):
        owner, name = path.parent.name, path.stem
        if not NAME.match(name) or not path.is_file():
            continue
        try:
            state = json.loads(path.read_text())
        except (OSError, ValueError) as exc:
            log.warning("saved state %s left in place: cannot read it (%s)", path, exc)
            continue
        if not isinstance(state, dict):
            log.warning("saved state %s left in place: not a browser state", path)
            continue
        if name not in await store.state_names(owner):
            await store.save_state(owner, name, state)
        path.unlink()
        moved += 1
    if moved:
        log.info("moved %d saved state(s) from %s into the store %s", moved, base, store.where)
    return moved


async def seal_older_releases(base: Path | None, store: Store) -> None:
    """Move old state files into ``store`` and seal its plaintext rows; without an identity
    that can encrypt, all of it waits for the next login, and the log says so."""
    try:
        await import_state_files(base, store)
        sealed = await store.seal_plaintext()
    except BrowserdError as exc:
        log.warning("what an older release saved in plaintext stays so for now: %s", exc.message)
        return
    if sealed:
        log.info("sealed %d saved state(s) and conversation(s) kept in plaintext before", sealed)
