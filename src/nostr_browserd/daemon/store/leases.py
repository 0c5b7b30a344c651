"""Worker rows and controller leases: which worker serves which controller, by the database.

Several workers share one identity and one store; each controller is leased to one of them at a
time, so its commands run in order, in one browser context.  Every time here is the database's
clock (``Store.now_sql``), never a worker's: two machines whose clocks differ still agree on
when a lease has expired.

- ``worker``: one row per worker name, with a heartbeat, a draining flag, ``gone`` after a
  graceful stop, and its load (running and queued commands, browser contexts).  ``instance`` is
  a token of the process now using the name: a second process started under a live worker's name
  waits until that one is gone or silent for a lease (two processes under one name would serve
  the same controllers), and a restarted worker whose old process is known dead takes its name
  (and its leases) back at once.
- ``lease``: one row per controller, with its worker and expiry.  Taking or renewing one is a
  single conditional upsert (:meth:`LeaseTables.take_lease`), so of two workers racing for a
  free controller exactly one gets it, without a lock held across statements.
- A held command (``pending``) names its worker, so the worker that takes a controller over
  adopts what the previous one left unanswered (``Store.adopt_held``).
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

# A held command's worker is dead: no row of it that is live (its heartbeat newer than ``?``
# seconds ago, and not gone).
DEAD_HOLDER = (
    "NOT EXISTS (SELECT 1 FROM worker WHERE worker.name = pending.worker AND worker.gone = 0"
    " AND worker.heartbeat > NOW - ?)"
)


@dataclass(frozen=True)
class WorkerRow:
    """A worker as the store knows it (seconds are ages, by the database's clock)."""

    name: str
    heartbeat_age: float
    draining: bool
    gone: bool
    running: int
    queued: int
    contexts: int
    leases: int

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready, for the status page."""
        return {**self.__dict__, "heartbeat_age": round(self.heartbeat_age, 1)}


@dataclass(frozen=True)
class LeaseRow:
    """A controller's lease: its worker, and seconds until it expires (negative: expired)."""

    controller: str
    worker: str
    expires_in: float

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready, for the status page."""
        return {**self.__dict__, "expires_in": round(self.expires_in, 1)}


class LeaseTables:
    """The statements on ``worker``, ``lease`` and ``pending.worker`` (mixed into ``Store``)."""

    # The database's clock, in seconds since the epoch, as an SQL expression.
    now_sql: str

    @abstractmethod
    async def _rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]: ...

    @abstractmethod
    async def _change(self, sql: str, params: Sequence[Any] = ()) -> int: ...

    def _now(self, sql: str) -> str:
        return sql.replace("NOW", f"({self.now_sql})")

    # --- workers -----------------------------------------------------------------------

    async def worker_up(
        self, name: str, instance: str, *, silent_for: float, dead: str = ""
    ) -> bool:
        """``name`` starts, as the process ``instance``: True once the name is its own.

        The name is taken from a process that stopped (``gone``), that has been silent for
        ``silent_for`` seconds, or that the caller knows is dead (its instance is ``dead``: a
        killed process restarted on the same host takes its name, and its leases, back at
        once); never from a live one, which would serve the same controllers beside it.
        """
        rows = await self._rows(
            self._now(
                "INSERT INTO worker (name, instance, started, heartbeat) VALUES (?, ?, NOW, NOW)"
                " ON CONFLICT (name) DO UPDATE SET instance = excluded.instance,"
                " started = excluded.started, heartbeat = excluded.heartbeat, draining = 0,"
                " gone = 0, running = 0, queued = 0, contexts = 0"
                " WHERE worker.gone = 1 OR worker.instance = excluded.instance"
                " OR worker.instance = ? OR worker.heartbeat <= NOW - ?"
                " RETURNING name"
            ),
            (name, instance, dead, silent_for),
        )
        return bool(rows)

    async def worker_instance(self, name: str) -> str | None:
        """The instance of the process that has the name ``name`` (None: nobody has had it)."""
        rows = await self._rows("SELECT instance FROM worker WHERE name = ?", (name,))
        return rows[0][0] if rows else None

    async def heartbeat(
        self, name: str, instance: str, *, running: int, queued: int, contexts: int
    ) -> bool:
        """Record that ``name`` lives, with its load; False when another process took the name."""
        return bool(
            await self._change(
                self._now(
                    "UPDATE worker SET heartbeat = NOW, running = ?, queued = ?, contexts = ?"
                    " WHERE name = ? AND instance = ?"
                ),
                (running, queued, contexts, name, instance),
            )
        )

    async def set_draining(self, name: str) -> None:
        """``name`` finishes what it has and takes nothing new: others stop preferring it."""
        await self._change("UPDATE worker SET draining = 1 WHERE name = ?", (name,))

    async def worker_gone(self, name: str, instance: str) -> None:
        """``name`` stopped gracefully (its leases are released already)."""
        await self._change(
            "UPDATE worker SET gone = 1, draining = 0, running = 0, queued = 0, contexts = 0"
            " WHERE name = ? AND instance = ?",
            (name, instance),
        )

    async def live_workers(self, within: float) -> list[str]:
        """Workers that beat within ``within`` seconds and take new controllers, by name."""
        rows = await self._rows(
            self._now(
                "SELECT name FROM worker WHERE heartbeat > NOW - ? AND draining = 0 AND gone = 0"
                " ORDER BY name"
            ),
            (within,),
        )
        return [r[0] for r in rows]

    async def workers(self) -> list[WorkerRow]:
        """Every worker the store knows, with its load and how many leases it holds now."""
        rows = await self._rows(
            self._now(
                "SELECT w.name, NOW - w.heartbeat, w.draining, w.gone, w.running, w.queued,"
                " w.contexts, (SELECT count(*) FROM lease l WHERE l.worker = w.name"
                " AND l.expires > NOW) FROM worker w ORDER BY w.name"
            )
        )
        return [
            WorkerRow(r[0], float(r[1]), bool(r[2]), bool(r[3]), r[4], r[5], r[6], r[7])
            for r in rows
        ]

    async def forget_workers(self, older_than: float) -> int:
        """Drop the rows of workers silent for ``older_than`` seconds (status stays short)."""
        return await self._change(
            self._now("DELETE FROM worker WHERE heartbeat < NOW - ?"), (older_than,)
        )

    # --- leases ------------------------------------------------------------------------

    async def take_lease(self, controller: str, worker: str, seconds: float) -> bool:
        """Lease ``controller`` to ``worker`` for ``seconds``, or renew it: one statement.

        It succeeds when the controller has no lease, when ``worker`` holds it already (a
        restarted worker, same name, takes its own back at once), or when the lease expired.
        """
        rows = await self._rows(
            self._now(
                "INSERT INTO lease (controller, worker, expires, since) VALUES (?, ?, NOW + ?, NOW)"
                " ON CONFLICT (controller) DO UPDATE SET worker = excluded.worker,"
                " expires = excluded.expires,"
                " since = CASE WHEN lease.worker = excluded.worker THEN lease.since"
                " ELSE excluded.since END"
                " WHERE lease.worker = excluded.worker OR lease.expires < NOW"
                " RETURNING worker"
            ),
            (controller, worker, seconds),
        )
        return bool(rows)

    async def renew_leases(self, worker: str, seconds: float) -> set[str]:
        """Extend every lease ``worker`` holds; the controllers it still holds.

        A lease missing from the answer was taken by another worker after it expired (this
        one was paused, or cut off from the database): it must stop serving that controller.
        """
        rows = await self._rows(
            self._now("UPDATE lease SET expires = NOW + ? WHERE worker = ? RETURNING controller"),
            (seconds, worker),
        )
        return {r[0] for r in rows}

    async def release_lease(self, controller: str, worker: str) -> None:
        """Hand ``controller`` back at once (another worker may take it now)."""
        await self._change(
            "DELETE FROM lease WHERE controller = ? AND worker = ?", (controller, worker)
        )

    async def release_leases(self, worker: str) -> None:
        """Hand every lease of ``worker`` back at once (a graceful stop)."""
        await self._change("DELETE FROM lease WHERE worker = ?", (worker,))

    async def leases(self) -> list[LeaseRow]:
        """Every lease, expired ones included until taken, for the status page."""
        rows = await self._rows(
            self._now("SELECT controller, worker, expires - NOW FROM lease ORDER BY worker")
        )
        return [LeaseRow(r[0], r[1], float(r[2])) for r in rows]

    # --- held commands across workers --------------------------------------------------

    async def orphans(self, worker: str, *, silent_for: float) -> list[str]:
        """Controllers with commands held by a dead worker (gone, or silent for ``silent_for``
        seconds) and no live lease: nobody has taken the controller since."""
        rows = await self._rows(
            self._now(
                "SELECT DISTINCT sender FROM pending WHERE worker <> ? AND NOT EXISTS"
                " (SELECT 1 FROM lease WHERE lease.controller = pending.sender"
                f" AND lease.expires > NOW) AND {DEAD_HOLDER}"
            ),
            (worker, silent_for),
        )
        return [r[0] for r in rows]

    async def start_held(self, outer_id: str, controller: str, worker: str) -> bool:
        """Fencing before a command runs: mark it running only if it is still ``worker``'s and
        so is the controller's lease (unexpired).  False: another worker took it over."""
        return bool(
            await self._change(
                self._now(
                    "UPDATE pending SET running = 1 WHERE outer_id = ? AND worker = ? AND EXISTS"
                    " (SELECT 1 FROM lease WHERE lease.controller = ? AND lease.worker = ?"
                    " AND lease.expires > NOW)"
                ),
                (outer_id, worker, controller, worker),
            )
        )

    async def answering(self, outer_id: str, worker: str) -> bool:
        """Fencing before a reply goes out: False when another worker adopted the command
        (and answered it), so this reply must not go out as a second one."""
        return bool(
            await self._change(
                "UPDATE pending SET running = 2 WHERE outer_id = ? AND worker = ?",
                (outer_id, worker),
            )
        )


__all__ = ["LeaseRow", "LeaseTables", "WorkerRow"]
