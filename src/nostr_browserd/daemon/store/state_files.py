"""Saved browser states from before the store kept them: moved into it once, at start.

Releases before the state store kept each ``state_save`` as ``<browser.state_dir>/<owner>/
<name>.json``.  At start every such file is written into the store (unless the store has a
state of that name already: it is the newer one) and then removed, so a state lives in one
place, which on PostgreSQL every worker reaches.  A file that cannot be read stays where it
is, and the log says so.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

from ...browser.paths import NAME
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
