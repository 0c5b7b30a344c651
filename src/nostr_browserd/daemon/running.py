"""Running, the pipeline's third stage: an admitted request, where it runs, within its deadline.

A request runs in one of five places: the daemon's own tools (login, API keys: the local
owner's only), a controller's ``ask`` turn (``Asker``), its monitors and schedules
(``Watches``), ``help`` from the caller's role, or — nearly always — the owner's browser
session, under the command deadline.

Stopped means stopped.  When the deadline passes, the request is cancelled, and this
returns only after it has ended: the tool's action is cancelled and awaited
(``Dialogs.until``; Playwright aborts the call in the browser as well), and the
session's lock is released only then, so the controller's next command never runs beside
what was stopped.  The reply then says what really happened (``protocol.Progress``): not
run, stopped in the middle, or done but past the deadline.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from ..browser.pool import BrowserPool
from ..browser.session import Session
from ..catalog import describe
from ..commands.protocol import Progress, Request, run
from ..commands.registry import Registry
from ..errors import BrowserdError, ErrorCode
from ..files.incoming import FileReceiver
from ..tools.schedule import WATCH_TOOLS
from .admission import LOCAL_ONLY, TURN_TOOLS, Caller, Standing, role_catalog
from .config import ControllerConfig

Response = dict[str, Any]
LocalTools = Callable[[str, dict[str, Any]], Awaitable[dict[str, Any]]]


class Asker(Protocol):
    """Runs ``ask`` turns (daemon/ask.py); ask, ask --stop and resume
    (``admission.TURN_TOOLS``) run there."""

    async def run(self, owner: str, request: Request, controller: ControllerConfig) -> Response:
        """``owner``'s ask (a turn: status, answer and steps), ask --stop or resume."""
        ...

    def stop_all(self) -> None:
        """End every running turn (the daemon is stopping)."""
        ...

    def handing_over(self, owner: str) -> bool:
        """Whether ``owner``'s turn waits for them (their commands then run beside it)."""
        ...


class Watches(Protocol):
    """Runs the monitor and schedule tools (daemon/schedule)."""

    async def run(self, caller: Caller, request: Request) -> Response:
        """One of ``tools.schedule.WATCH_TOOLS`` for ``caller``, admitted already."""
        ...

    async def close(self) -> None:
        """Stop: no check or run starts any more, and those running end."""
        ...


class Running:
    """Runs admitted requests where they belong; a session's within ``command_timeout``."""

    def __init__(
        self,
        registry: Registry,
        browser: BrowserPool,
        command_timeout: float,
        local_tools: LocalTools | None = None,
    ) -> None:
        """``local_tools`` runs the daemon's own tools (none in MCP --local: unknown there);
        ``asker`` (set by the composer, once made) runs ask turns, ``files_in`` keeps the
        files controllers send (for ``upload``)."""
        self.registry, self.browser = registry, browser
        self.command_timeout = command_timeout
        self.local_tools = local_tools
        self.asker: Asker | None = None
        self.watches: Watches | None = None  # set by the daemon when it starts: monitors
        self.files_in: FileReceiver | None = None  # set by the daemon: files sent in

    async def run(self, caller: Caller, request: Request) -> Response:
        """``request``'s response, run where its tool runs; admitted already."""
        if caller.is_local and request.tool in LOCAL_ONLY:
            if self.local_tools is None:
                self.registry.get(request.tool)  # UNKNOWN_TOOL: no daemon here (MCP --local)
            else:
                data = await self.local_tools(request.tool, request.params or {})
                return {"id": request.id, "success": True, "data": data}
        if caller.standing is Standing.CONTROLLER and request.tool in TURN_TOOLS:
            assert caller.controller is not None
            if self.asker is None:
                raise BrowserdError(ErrorCode.UNAVAILABLE, "ask is not set up in this daemon.")
            return await self.asker.run(caller.owner, request, caller.controller)
        if request.tool in WATCH_TOOLS:
            if self.watches is None:
                raise BrowserdError(ErrorCode.UNAVAILABLE, "This daemon runs no monitors.")
            return await self.watches.run(caller, request)
        if caller.controller is not None and request.tool == "help":  # every role may ask
            _, asked = self.registry.validate("help", request.params)
            name = getattr(asked, "tool", None)
            catalog = role_catalog(self.registry, caller.controller)
            data = describe(self.registry, name) if name else catalog
            return {"id": request.id, "success": True, "data": data}
        return await self.on_session(caller.owner, request)

    async def receive(self, owner: str, url: str, tags: list[list[str]]) -> Response:
        """A file ``owner`` sent (admitted: its role may upload), kept for ``upload``."""
        if self.files_in is None:
            raise BrowserdError(ErrorCode.UNAVAILABLE, "This daemon keeps no files.")
        data = await self.files_in.receive(owner, url, tags)
        return {"id": None, "success": True, "data": data}

    async def on_session(self, owner: str, request: Request) -> Response:
        """``request`` on ``owner``'s browser session, within the command deadline."""
        session = await self.browser.session(owner)
        return await within(self.registry, session, request, self.command_timeout)


async def within(
    registry: Registry, session: Session, request: Request, seconds: float
) -> Response:
    """``request``'s response on ``session``, or ``TIMEOUT`` once ``seconds`` pass, raised
    only after the request has ended."""
    progress = Progress()
    try:
        return await asyncio.wait_for(run(registry, session, request, progress), seconds)
    except TimeoutError:
        raise overdue(request.tool, seconds, progress) from None


def overdue(tool: str, seconds: float, progress: Progress) -> BrowserdError:
    """The ``TIMEOUT`` a request past its deadline gets, as far as it had got."""
    late = f"{tool} did not finish within {seconds:g} s"
    if not progress.started:
        return BrowserdError(ErrorCode.TIMEOUT, f"{late}: it had not started, and was not run.")
    if not progress.done:
        return BrowserdError(ErrorCode.TIMEOUT, f"{late} and was stopped.")
    return BrowserdError(
        ErrorCode.TIMEOUT,
        f"{late}, but its action was done: only reading the page after it was cut short."
        " Look (snapshot, get url) before you send it again.",
    )
