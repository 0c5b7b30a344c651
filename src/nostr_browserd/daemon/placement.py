"""Which worker serves a controller: the lease decisions, as pure code.

Everything here is computed from times (``time.monotonic()`` values the caller passes in) and
the live workers the caller read from the store; nothing here reads a clock or the store, so
each rule is tested alone (tests/test_placement.py).  ``daemon/workers.py`` is the shell
around it: it asks the store, and acts on these answers.

- *preference*: a free controller goes to its preferred worker, by rendezvous hashing over the
  live workers that are not draining;
- *may take*: whether this worker may ask the store for a controller's lease now;
- *freshness*: whether a lease held here is surely still this worker's without asking;
- *elsewhere*: whether a lease the store just refused is surely still another live worker's
  without asking again (a wrap for that controller then costs this worker no statement);
- *opens*: whether this worker opens the seal of a gift wrap whose first decryption named a
  controller: only where its commands may run (the others keep the wrap aside, sealed);
- *hand-over*: none while this worker lives.  A controller leaves its worker only when that
  one drains (and releases its leases) or dies (and they expire): a move reloads its pages, so
  a controller is not moved to balance the load, not even to an idle worker that joined later
  (that one takes its share of the controllers that are free).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

LIVE_FRESH = 1.0
"""Seconds the list of live workers is trusted before a free controller is placed by it."""

ASIDE_FORGET = 1.0
"""Seconds between two questions to the store about messages kept aside for controllers this
worker may not take: asked only to forget those their lease holder claimed."""


def preferred(controller: str, workers: Sequence[str]) -> str | None:
    """The worker ``controller`` goes to when free: the highest hash of (worker, controller).

    Rendezvous hashing: each worker gets an even share, and a worker joining or leaving moves
    only the controllers that prefer it.
    """

    def score(worker: str) -> bytes:
        return hashlib.sha256(f"{worker}\n{controller}".encode()).digest()

    return max(workers, key=score, default=None)


@dataclass
class Held:
    """A lease this worker holds: when it was last asked for and granted, and last used."""

    granted: float
    used: float


class Placement:
    """This worker's view of the leases: the ones it holds, and the live workers."""

    def __init__(self, name: str, lease: float) -> None:
        self.name, self.lease = name, lease
        self.held: dict[str, Held] = {}
        # controller -> when the store refused its lease here, and the live workers then
        self.refusals: dict[str, tuple[float, list[str]]] = {}
        self.live: list[str] = [name]
        self.live_at = -math.inf  # when ``live`` was read
        self.draining = False

    # --- the live workers --------------------------------------------------------------

    def read_live(self, live: Iterable[str], now: float) -> None:
        """The store's live workers, read at ``now``; this one among them unless draining
        (it is live: its row may just not show it yet)."""
        names = sorted(set(live))
        if not self.draining and self.name not in names:
            names = sorted([*names, self.name])
        self.live, self.live_at = names, now

    def needs_live(self, controller: str, waited: float, now: float) -> bool:
        """Whether ``live`` must be read again before :meth:`may_take` places ``controller``
        by it: not held here, not waited long enough to be taken anyway, and read more than
        :data:`LIVE_FRESH` seconds ago."""
        unplaced = controller not in self.held and waited < self.grace()
        return unplaced and now - self.live_at > LIVE_FRESH

    def others_live(self) -> bool:
        """Whether another worker is live, which could take a controller over."""
        return any(name != self.name for name in self.live)

    def prefers_me(self, controller: str) -> bool:
        """Whether this worker is ``controller``'s preferred one (or none is live)."""
        return preferred(controller, self.live) in (self.name, None)

    # --- taking and keeping a lease ----------------------------------------------------

    def fresh(self, controller: str, now: float) -> bool:
        """Whether ``controller``'s lease is surely still this worker's without asking: held,
        and granted less than a third of the lease ago (asked before the statement ran, so the
        database's expiry is later still).  This spares a write for every command."""
        held = self.held.get(controller)
        return held is not None and now - held.granted < self.lease / 3

    def grace(self) -> float:
        """Seconds a free controller's message waits for its preferred worker, live, before
        any worker takes it (that one does not see it: a relay it does not read).  A lease
        period: a preferred worker that is merely slow to open its messages (a busy machine)
        takes its controller well within it."""
        return self.lease

    def may_take(self, controller: str, waited: float, now: float) -> bool:
        """Whether to ask the store for ``controller``'s lease: held here already, its message
        waited out the :meth:`grace` (its preferred worker does not see it), or preferred
        and not :meth:`elsewhere`."""
        if controller in self.held or waited >= self.grace():
            return True
        return self.prefers_me(controller) and not self.elsewhere(controller, now)

    def ask_aside(self, waits: dict[str, float], asked: float, now: float) -> bool:
        """Whether to ask the store about the messages kept aside now (which were claimed,
        and whose leases may be taken): ``waits`` holds each of their controllers and how
        long its first message has waited, ``asked`` when the store was last asked.

        Only when one of those controllers :meth:`may_take` here, or once every
        :data:`ASIDE_FORGET` seconds to forget what the holders claimed (and to read the
        live workers again: a holder that drained or died is seen as soon as before).  A
        look between two such costs a worker that runs none of these commands nothing."""
        if now - asked >= ASIDE_FORGET:
            return True
        return any(self.may_take(c, waited, now) for c, waited in waits.items())

    def opens(self, controller: str, now: float) -> bool:
        """Whether to open now the seal of a wrap that names ``controller``: held here, or
        free for this worker to take (:meth:`may_take` of a message that has not waited).

        The seal (a signature check and a second decryption) is what a worker that does not
        run the command would pay for nothing; the wrap's own decryption cannot be spared,
        since only it names the sender.  A wrap kept aside sealed is opened when its lease
        comes here (its worker drained or died, or did not see it for a :meth:`grace`)."""
        return not self.draining and self.may_take(controller, waited=0.0, now=now)

    def refused(self, controller: str, now: float) -> None:
        """The store refused ``controller``'s lease here at ``now``: another worker holds it."""
        self.lost(controller)
        self.refusals[controller] = (now, self.live)

    def elsewhere(self, controller: str, now: float) -> bool:
        """Whether ``controller``'s lease is surely another worker's without asking again:
        the store refused it less than a third of the lease ago, and the live workers read
        since are the same.  A holder that drains leaves that list as it releases its leases,
        and one that dies leaves it as they expire (both are silent for a lease), so this
        worker asks again as soon as the lease may be free; until then a preferred worker
        that merely sees another's controller asks nothing for its messages."""
        refusal = self.refusals.get(controller)
        if refusal is None:
            return False
        at, live = refusal
        if now - at < self.lease / 3 and live == self.live:
            return True
        del self.refusals[controller]
        return False

    def granted(self, controller: str, asked: float) -> bool:
        """The store granted ``controller``'s lease, asked at ``asked``; True when it was not
        held here before (what another worker left must be answered)."""
        self.refusals.pop(controller, None)
        held = self.held.get(controller)
        if held is None:
            self.held[controller] = Held(asked, asked)
            return True
        held.granted = held.used = asked
        return False

    def used(self, controller: str, now: float) -> None:
        """A message of ``controller`` was admitted under its fresh lease."""
        self.held[controller].used = now

    def lost(self, controller: str) -> None:
        """``controller`` is no longer served here (another worker took it over)."""
        self.held.pop(controller, None)

    def renewed(self, kept: Iterable[str], asked: float) -> list[str]:
        """The heartbeat renewed the leases in ``kept``, asked at ``asked``: the controllers
        held here that are missing from it were taken by another worker (this one was paused),
        and are forgotten here; they are returned, in order."""
        kept = set(kept)
        for controller in kept & self.held.keys():
            self.held[controller].granted = asked
        gone = sorted(self.held.keys() - kept)
        for controller in gone:
            self.lost(controller)
        return gone


__all__ = ["ASIDE_FORGET", "LIVE_FRESH", "Held", "Placement", "preferred"]
