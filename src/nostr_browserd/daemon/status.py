"""What ``nostr-browserd status`` and the local status page show, read from the running parts.

Every part is read as it is now, none is asked to keep a copy: the allow-list after a
reload, the relays after an identity switch, the approvals waiting on every worker (from the
store), this worker's queues.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from .. import __version__
from ..browser.pool import BrowserPool
from ..dm.link import NostrLink
from ..nostr.nip19 import npub_encode
from .allow_list import AllowList
from .dispatch import Dispatcher
from .schedule.service import Scheduler
from .store import Store
from .workers import Worker


@dataclass(frozen=True)
class Running:
    """The daemon's parts the status reads; None where one is not up (yet, or any more)."""

    identity: dict[str, Any]
    direct_messages: str
    started_at: float
    allowed: AllowList
    browser: BrowserPool | None
    embedded_relay: str | None
    link: NostrLink | None
    dispatcher: Dispatcher | None
    store: Store | None
    worker: Worker | None
    watches: Scheduler | None = None


async def daemon_status(parts: Running) -> dict[str, Any]:
    """Identity, relays and their state, controllers, queues, recent commands, and the
    workers sharing the state store with their load and leases."""
    status: dict[str, Any] = {
        "version": __version__,
        "uptime": round(time.time() - parts.started_at, 1),
        "identity": parts.identity,
        "direct_messages": parts.direct_messages,
        "relays": relays(parts.link),
        "embedded_relay": parts.embedded_relay,
        "controllers": controllers(parts.allowed, parts.browser),
        **browsing(parts.browser),
    }
    if parts.dispatcher is not None:
        status.update(parts.dispatcher.status())
    if parts.link is not None and parts.link.inbox is not None:
        status["inbox"] = parts.link.inbox.status()
    if parts.store is not None:
        status.update(await stored(parts.store))
    if parts.worker is not None:
        status.update(await parts.worker.status())
    if parts.watches is not None:
        status["monitors"] = await parts.watches.status()
    return status


def browsing(browser: BrowserPool | None) -> dict[str, Any]:
    """The browser, its endpoints and every session's tabs (nothing before start or after
    stop)."""
    if browser is None:
        return {"browser": {"alive": False, "sessions": 0}, "endpoints": [], "tabs": []}
    return {
        "browser": {"alive": browser.alive, "sessions": len(browser.sessions())},
        "endpoints": browser.status(),
        "tabs": tabs(browser),
    }


def relays(link: NostrLink | None) -> dict[str, dict[str, Any]]:
    """Each relay's connection and publishing state."""
    if link is None:
        return {}
    return {
        url: {
            "state": st.state,
            "publish_state": st.publish_state,
            "authenticated": st.authenticated,
            "last_error": st.last_error,
        }
        for url, st in link.relay_status().items()
    }


def controllers(allowed: AllowList, browser: BrowserPool | None) -> list[dict[str, Any]]:
    """The allow-list as it is now, by npub, with each one's files on the disk (bytes by
    kind, their total and the quota)."""
    return [
        {
            "npub": npub_encode(pk),
            "name": c.name,
            "role": c.role,
            "approver": npub_encode(c.approver) if c.approver else None,
            "files": browser.quota.use(pk) if browser is not None else None,
        }
        for pk, c in allowed.items()
    ]


async def stored(store: Store) -> dict[str, Any]:
    """What the store holds: its counts, the approvals waiting on any worker, the last
    commands."""
    return {
        "store": {"database": store.where, **(await store.counts())},
        "approvals": [
            {
                **a,
                "controller": npub_encode(a["controller"]),
                "approver": npub_encode(a["approver"]),
            }
            for a in await store.approvals()
        ],
        "recent": [e.to_dict() for e in await store.recent(10)],
    }


def tabs(browser: BrowserPool) -> list[dict[str, Any]]:
    """Every session's tabs: whose (an npub, or "local"), the id, the address."""
    found = []
    for session in browser.sessions():
        owner = session.owner
        if len(owner) == 64 and all(c in "0123456789abcdef" for c in owner):
            owner = npub_encode(owner)
        for tab in session.tabs.values():
            active = tab is session.tab
            found.append({"owner": owner, "tab": tab.id, "url": tab.page.url, "active": active})
    return found
