"""The zero-config relay: nostr-sdk's in-process LocalRelay on loopback.

With no relay configured, ``nostr-browserd run`` starts one so that a controller on the same
machine can talk to the daemon at once.  It starts in about a millisecond, keeps events in
memory only and stops with the daemon.  It listens on 127.0.0.1 only: a phone cannot reach
it; configure real relays for that.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import nostr_sdk

log = logging.getLogger(__name__)

# nostr-sdk's default limit (a few dozen events a minute per connection) is meant for a public
# relay; a big reply alone is a dozen parts.  Loopback only, so a generous one.
RATE_REQS, RATE_EVENTS = 500, 6000


class EmbeddedRelay:
    """A LocalRelay bound to ``127.0.0.1:port`` (a fixed port: controllers must find it)."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.url = f"ws://127.0.0.1:{port}"
        self._relay: nostr_sdk.LocalRelay | None = None

    async def start(self) -> str:
        """Listen; returns the ``ws://`` URL.  Fails clearly when the port is taken."""
        # Here: a daemon with relays of its own never loads it (0.05 s of CPU, in a thread).
        nostr_sdk = await asyncio.to_thread(importlib.import_module, "nostr_sdk")

        relay = (
            nostr_sdk.LocalRelayBuilder()
            .addr("127.0.0.1")
            .port(self.port)
            .rate_limit(nostr_sdk.RateLimit(max_reqs=RATE_REQS, notes_per_minute=RATE_EVENTS))
            .build()
        )
        try:
            await relay.run()
        except Exception as exc:
            raise OSError(
                f"cannot start the embedded relay on 127.0.0.1:{self.port} ({exc}); "
                "set nostr.embedded_relay_port or configure nostr.relays"
            ) from None
        self._relay = relay
        log.info("embedded relay listening on %s", self.url)
        return self.url

    def stop(self) -> None:
        """Shut it down (synchronous in nostr-sdk); harmless when not running."""
        if self._relay is not None:
            self._relay.shutdown()
            self._relay = None
