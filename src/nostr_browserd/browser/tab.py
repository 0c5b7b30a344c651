"""One tab of a session: its page, the listeners on it, and what the session knows of it.

A ``Tab`` owns its page the way Playwright MCP's ``Tab`` does: it listens to the page itself,
keeps the title the page reports, holds the dialog that waits for an answer and the alerts it
accepted, the frame chosen with ``frame_switch``, and finds elements by ref, selector or a
number of its last annotated screenshot; it drops itself when its renderer crashes.  What the
whole session must hear (its events, a dialog opening, a load, the tab's end) it tells its
``TabOwner``.  Closing a tab forgets all of it at once, with the last snapshot and screenshot
that the diffs and the annotated screenshot compare against.

A background tab (``background``, see ``background_tabs.py``) is a tab like any other whose
owner tells no one: what a tool does on it, it does on its own page, refs and numbers.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from playwright.async_api import (
    BrowserContext,
    ConsoleMessage,
    Dialog,
    Download,
    Frame,
    Locator,
    Page,
)

from ..errors import BrowserdError, ErrorCode
from .downloads import was_asked
from .labels import Label, Labels, is_label, label_of
from .refs import locate
from .titles import observe

if TYPE_CHECKING:
    from .snapshot.printer import Seen

# Dialogs in the order they opened, across tabs: the session answers the newest first.
_OPENED = itertools.count()


class Emitter(Protocol):
    """Where a tab's events go (``events.Events``)."""

    def emit(self, event: str, data: dict[str, Any]) -> None:
        """Send one event (load, dialog, download, crash, …)."""
        ...


class DialogSink(Protocol):
    """Who hears that a tab's dialog opened (``dialogs.Dialogs``, which imports us)."""

    def opened(self, alert: dict[str, Any] | None) -> None:
        """A dialog opened: an alert accepted already (``alert``), or one that waits."""
        ...


class Runner(Protocol):
    """Who runs what a tab's handlers start (``chores.Chores``)."""

    def run(self, awaitable: Awaitable[Any]) -> None:
        """Run it to its end, kept until it is done."""
        ...


class TabOwner(Protocol):
    """What a tab tells the session it belongs to (``session.Session``, which imports us), or
    the background tabs (``background_tabs.BackgroundTabs``), which tell no one."""

    @property
    def events(self) -> Emitter:
        """Where its events go."""
        ...

    @property
    def dialogs(self) -> DialogSink:
        """Who hears its dialogs open."""
        ...

    @property
    def chores(self) -> Runner:
        """Who runs what its handlers start (``settle`` waits for it)."""
        ...

    def loaded(self, tab: Tab) -> None:
        """The tab's document fired its load event."""
        ...

    def closed(self, tab: Tab) -> None:
        """The tab is gone: closed, or its renderer crashed."""
        ...


@dataclass(eq=False)
class Snapshot:
    """A tab's latest snapshot: the params it was taken with, its text, and of what.

    ``document`` is the tab's ``document`` count it was taken in (None when the page
    navigated while it was taken), ``frame`` the frame chosen then: a delta compares only
    snapshots of the same document and frame, whose refs are the same.
    """

    params: dict[str, Any]
    text: str
    document: int | None = None
    frame: Frame | None = None
    truncated: bool = False
    seen: Seen | None = None  # its whole print, to leave out what the next one repeats


@dataclass
class PendingDialog:
    """A dialog the page opened and nobody has answered yet."""

    tab: str
    dialog: Dialog
    number: int = field(default_factory=lambda: next(_OPENED))

    def describe(self) -> dict[str, Any]:
        """What a controller needs to decide: type, message and a prompt's default."""
        info: dict[str, Any] = {"type": self.dialog.type, "message": self.dialog.message}
        if self.dialog.type == "prompt":
            info["default"] = self.dialog.default_value
        info["tab"] = self.tab
        info["hint"] = "answer with: dialog accept [value] | dialog dismiss"
        return info


class Tab:
    """A page with a stable id (``t3``, never reused) in a window (``w1``) of a session."""

    # Alerts accepted per command before one is left open (an alert loop).
    ALERT_LIMIT = 20

    def __init__(
        self, tab_id: str, page: Page, window: str, owner: TabOwner, *, background: bool = False
    ) -> None:
        self.id = tab_id
        self.page = page
        self.window = window
        self._owner = owner
        self.background = background  # no tab list shows it, and it is never the active one
        self.title: str | None = None  # None: not known since the document last changed
        # Changes with every title report or new document, so a title read it raced is not kept.
        self._title_version = 0
        # The document has reported its title since it last changed (it does from its load
        # on, and then observes it): a title read from the page may be kept.
        self._reporting = False
        # Set when the document reported its title at its load, during this command:
        # ``title`` is then current without asking the page (see ``read_title``).
        self._load_reported = asyncio.Event()
        self.snapshot: Snapshot | None = None
        # Counts the top frame's navigations: a new document numbers its refs anew.
        self.document = 0
        self.screenshot: bytes | None = None
        self.labels: Labels | None = None  # of the last annotated screenshot (click 3)
        self.told_labels: dict[int, Label] = {}  # the numbers the running command acts on
        # Reopened at its last address after the browser moved to this worker: a ref that names
        # nothing on it is one from before the move (``Session.locate`` says so).
        self.reloaded = False
        self.dialog: PendingDialog | None = None
        self._alerts = 0  # accepted during the running command
        # The frame targets resolve in after frame_switch, and a note for the next result
        # when it was lost (removed, or the page navigated).
        self.frame: Frame | None = None
        self.frame_note: str | None = None
        page.on("dialog", self._on_dialog)
        page.on("framenavigated", self._on_navigated)
        page.on("domcontentloaded", lambda _p: self._title_changed())
        page.on("load", lambda _p: self._on_load())
        page.on("close", lambda _p: owner.closed(self))
        page.on("download", self._on_download)
        page.on("console", self._on_console)
        page.on("crash", lambda _p: self._on_crash())
        page.on(
            "pageerror",
            lambda e: owner.events.emit("console_error", {"tab": self.id, "text": str(e)}),
        )
        page.on("framedetached", self._on_frame_detached)
        # Its page reports its title on a CDP session of the tab's (titles.py); a background
        # tab, read once, asks its page.  Not a chore: a dialog open in a popup would hold it.
        self._observing: asyncio.Future[Any] | None = None
        if not background:
            self._observing = asyncio.ensure_future(
                observe(page, lambda title, at_load: self.title_reported(title, at_load))
            )
            self._observing.add_done_callback(consume)

    @property
    def context(self) -> BrowserContext:
        """The BrowserContext of the tab's window (its cookies and storage)."""
        return self.page.context

    # --- where targets resolve ------------------------------------------------------

    @property
    def scope(self) -> Page | Frame:
        """Where targets resolve and scripts run: the frame_switch frame, else the page."""
        return self.frame or self.page

    def enter_frame(self, frame: Frame) -> None:
        """Resolve targets and run scripts in ``frame`` of this tab (frame_switch)."""
        self.frame = frame

    def leave_frame(self) -> bool:
        """Back to the main frame (frame_main); whether a frame had been chosen."""
        chosen, self.frame = self.frame is not None, None
        return chosen

    def _on_frame_detached(self, frame: Frame) -> None:
        """The chosen frame went away (removed, or its page navigated): back to main."""
        if frame is self.frame:
            self.frame = None
            self.frame_note = "The frame is gone (removed or the page navigated): back to main."

    async def locate(self, ref: str | None = None, selector: str | None = None) -> Locator:
        """Exactly one element by snapshot ref, CSS selector or a label of the last annotated
        screenshot (a bare number), or a coded error, fast.

        A reloaded page has no refs until a snapshot here: on a tab reopened after the browser
        moved, a ref that names nothing is one from before the move, and the error says so.
        """
        if is_label(selector) and ref is None:
            assert selector is not None
            label = label_of(self.labels, selector)
            ref, selector = label.ref, None
            self.told_labels[label.n] = label  # the reply repeats what the number meant
        try:
            return await locate(self.scope, ref=ref, selector=selector)
        except BrowserdError as exc:
            if exc.code is not ErrorCode.STALE_REF or not self.reloaded:
                raise
            raise BrowserdError(
                ErrorCode.STALE_REF,
                f"Ref {ref} is from before this browser moved to another worker, which reopened"
                " and reloaded its pages: take a new snapshot.",
            ) from None

    # --- title ---------------------------------------------------------------------

    async def read_title(self, fresh: bool = False) -> str | None:
        """The title, or None while a dialog blocks the page's scripts (or it is gone).

        Cached: from its load on the page reports its title as it changes, and a new document
        (or a move within one) forgets it; until the page has reported, a read is asked of the
        page each time and not kept, since a change would go unreported.  Only a command that
        acted on the page asks ``fresh``: the report of a change it caused may still be on its
        way, unless the command loaded a document, which reported its title at its load
        (``open``, ``reload``; its load handlers' changes arrive before the load event).  Until
        that report is in, it races the page's answer: a page whose scripts never report (an
        error page) still gets its title read.
        """
        if self.dialog is not None:
            return None
        if (not fresh or self._load_reported.is_set()) and self.title is not None:
            return self.title
        version = self._title_version
        with contextlib.suppress(Exception):
            read = asyncio.ensure_future(asyncio.wait_for(self.page.title(), 2))
            reported = asyncio.ensure_future(self._load_reported.wait())
            try:
                await asyncio.wait({read, reported}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                reported.cancel()
            if self._load_reported.is_set() and self.title is not None:
                read.add_done_callback(consume)
                read.cancel()
                return self.title
            title = await read
            if version == self._title_version and self._reporting:
                self.title = title
            return title
        return None

    async def observed(self) -> None:
        """Wait until the tab hears its page's title reports (or could not: it closed)."""
        if self._observing is not None:
            await asyncio.wait({self._observing})

    def title_reported(self, title: str, at_load: bool = False) -> None:
        """The title observer's report from the tab's top document (``at_load``: its load)."""
        self._title_changed(title)
        self._reporting = True
        if at_load:
            self._load_reported.set()

    def _title_changed(self, title: str | None = None) -> None:
        """Keep a reported title, or forget the title (None) when the document changed."""
        self._title_version += 1
        self.title = title
        if title is None:
            self._reporting = False
            self._load_reported.clear()

    def _on_navigated(self, frame: Frame) -> None:
        if frame.parent_frame is None:
            self.document += 1
            self._title_changed()
            if self.labels is not None:  # the picture's numbers were of the last document
                self.labels.current = False

    async def announce(self, event: str) -> None:
        """Emit the tab's ``{"url", "title", "tab"}`` as ``event`` (load, tab_changed)."""
        url = self.page.url
        self._owner.events.emit(
            event, {"url": url, "title": await self.read_title(), "tab": self.id}
        )

    def _on_load(self) -> None:
        # The title is kept: the document reported it at its load, and its load handlers'
        # changes, before this event; a report still on its way is awaited (``read_title``).
        self._owner.chores.run(self.announce("load"))
        self._owner.loaded(self)

    # --- dialogs -------------------------------------------------------------------

    def _on_dialog(self, dialog: Dialog) -> None:
        """Alerts are accepted and reported once; anything that asks waits for an answer.

        A page that alerts without end (``for (;;) alert()``) gets ``ALERT_LIMIT`` accepted
        per command; the next one stays open like a confirm, and the page waits on it.
        """
        self._alerts += 1
        alert: dict[str, Any] | None = None
        if dialog.type == "alert" and self._alerts <= self.ALERT_LIMIT:
            alert = {"type": "alert", "message": dialog.message, "tab": self.id}
            self._owner.chores.run(dialog.accept())
        else:
            self.dialog = PendingDialog(self.id, dialog)
        self._owner.dialogs.opened(alert)
        self._owner.events.emit(
            "dialog", {"tab": self.id, "type": dialog.type, "message": dialog.message}
        )

    def new_command(self) -> None:
        """A command begins: the page may accept ``ALERT_LIMIT`` alerts again, and a title
        reported at the last load is no longer known current (the command may change it)."""
        self._alerts = 0
        self._load_reported.clear()
        self.told_labels.clear()

    async def answer(self, accept: bool, value: str | None = None) -> dict[str, Any]:
        """Accept (with ``value`` for a prompt) or dismiss the dialog waiting here."""
        pending = self.dialog
        if pending is None:
            raise BrowserdError(ErrorCode.NO_DIALOG, "No dialog is open.")
        self.dialog = None
        info = pending.describe()
        info.pop("hint")
        if not accept:
            await pending.dialog.dismiss()
        elif value is not None:
            await pending.dialog.accept(value)
        else:
            await pending.dialog.accept()
        return {**info, "answer": "accepted" if accept else "dismissed"}

    # --- what else the page says ---------------------------------------------------

    def _on_download(self, download: Download) -> None:
        self._owner.chores.run(self._announce(download))

    async def _announce(self, download: Download) -> None:
        """Say the download began, and whether it is kept: only a command's is (a task, so
        that the command has claimed its own by now: ``downloads.asked``)."""
        data = {"tab": self.id, "url": download.url, "filename": download.suggested_filename}
        self._owner.events.emit("download", {**data, "kept": was_asked(download)})

    def _on_console(self, message: ConsoleMessage) -> None:
        if message.type == "error":
            self._owner.events.emit("console_error", {"tab": self.id, "text": message.text[:500]})

    def _on_crash(self) -> None:
        """A tab whose renderer died is useless: drop it so the next command can go on."""
        self._owner.events.emit("crash", {"tab": self.id, "url": self.page.url})
        self._owner.closed(self)
        self._owner.chores.run(self.page.close())


def consume(task: asyncio.Future[Any]) -> None:
    """A done callback for a task nobody awaits: its exception is retrieved, not logged."""
    if not task.cancelled():
        task.exception()
