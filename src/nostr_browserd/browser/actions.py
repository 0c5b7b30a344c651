"""The one door every action on a session goes through: its start and its end, told once.

Every tool call on a session runs inside ``Actions.around`` (``commands.registry.Tool.run``):
a command, each command of a batch, a find's action, a step of ``ask``.  An observer added
with ``observe`` hears ``started(action)`` before the tool runs and ``ended(action, error)``
once it has returned, failed or been cancelled, ``error`` None when it returned.  What
must follow every action (recording) observes here, and nowhere else.

An observer is called on the event loop, in the action's own order, and must not block; one
that raises is logged and the action goes on.  The params are the tool's validated model:
what they hold that is secret (a typed password, a vault value's name) is the observer's
to redact (``redact.py``), as the audit does.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, Protocol

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Action:
    """One tool call on a session: its number in the session, tool, params and tab."""

    number: int
    tool: str
    params: Any
    tab: str | None  # the active tab when it began


class ActionObserver(Protocol):
    """What follows every action of a session."""

    def started(self, action: Action) -> None:
        """``action`` begins."""
        ...

    def ended(self, action: Action, error: BaseException | None) -> None:
        """``action`` is over: returned (``error`` None), failed or cancelled."""
        ...


class Actions:
    """A session's observers of its actions."""

    def __init__(self) -> None:
        self._observers: list[ActionObserver] = []
        self._numbers = itertools.count(1)

    def observe(self, observer: ActionObserver) -> Callable[[], None]:
        """Tell ``observer`` of every action from now on; returns what stops it."""
        self._observers.append(observer)
        return lambda: self._observers.remove(observer)

    @asynccontextmanager
    async def around(self, tool: str, params: Any, tab: str | None) -> AsyncIterator[Action]:
        """Announce the action's start, run the body, then announce its end (once)."""
        action = Action(next(self._numbers), tool, params, tab)
        for observer in list(self._observers):
            self._tell(observer.started, action)
        error: BaseException | None = None
        try:
            yield action
        except BaseException as exc:
            error = exc
            raise
        finally:
            for observer in list(self._observers):
                self._tell(observer.ended, action, error)

    @staticmethod
    def _tell(hook: Callable[..., None], *args: Any) -> None:
        try:
            hook(*args)
        except Exception:
            log.exception("an action observer failed")
