"""Admission, the pipeline's second stage: who is asking, and whether they may run this now.

One entrance for every caller (:class:`Admission`, ``admit``): the login state, where the
tool may be asked from, the role, and consent, for which a gated command is held while its
approver is asked by DM (``approvals.Approvals``) and runs only on ``approve <code>``.

Three callers, one value (:class:`Caller`), so that no rule is written twice:

- the **local owner** (the local channel, MCP ``--local``): full role, no approval, the
  tools kept to this machine (login, API keys, the live view);
- a **controller** (a DM, or ContextVM): its role, its approver for what is gated, never a
  local-only tool; ``help`` answers from its role's catalog;
- an **ask step**, a tool call the model makes on a controller's behalf: the controller's
  role, and consent for whatever can change a page or send data out (``needs_consent``),
  asked of the controller's approver, or of the controller itself.

Logged out means logged out for all three: only the login tools run.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from enum import Enum
from typing import Any

from ..browser.pool import BrowserPool
from ..browser.target import Element
from ..catalog import describe
from ..commands.protocol import Request
from ..commands.registry import Registry
from ..errors import BrowserdError, ErrorCode
from ..nostr.nip19 import npub_encode
from .allow_list import AllowList
from .approvals import Approvals
from .config import ControllerConfig, Role
from .consent import commits, describe_action, needs_consent, target_of
from .key_tools import KEY_TOOLS

Waiting = Callable[[float], Awaitable[None]]

LOGIN_TOOLS = frozenset({"login_status", "login", "logout", "switch_identity"})
LOCAL_ONLY = LOGIN_TOOLS | KEY_TOOLS
# A controller's own ask turn: ask starts or stops it, resume gives back a turn it handed
# over.  Only a controller has turns (never the local owner, never the model itself).
TURN_TOOLS = frozenset({"ask", "resume"})
NO_STREAM_BY_MESSAGE = (
    "{} works only on the local control channel (the live view): a relay is no video "
    "channel. Over messages, follow along with watch and screenshot."
)
NOT_LOGGED_IN_MESSAGE = (
    "Not logged in: until an identity is, only login_status, login, logout and switch_identity"
    ' run. Log in on the local channel with login (e.g. {"tool": "login", "params": {"method":'
    ' "local", "nsec_file": "/path/to/key.nsec"}}), or set [identity] in the config file and'
    " restart."
)


class Standing(Enum):
    """Where a request comes from."""

    LOCAL = "local"
    CONTROLLER = "controller"
    ASK = "ask"


@dataclass(frozen=True)
class Caller:
    """Who is asking: ``owner`` (whose browser session it runs in) and, but for the local
    owner, the controller whose role and approver apply.  ``reason`` is an ask step's
    (the model's why, shown to the approver)."""

    owner: str
    standing: Standing
    controller: ControllerConfig | None = None
    reason: str = ""

    @classmethod
    def local(cls, owner: str) -> Caller:
        """This machine's owner."""
        return cls(owner, Standing.LOCAL)

    @classmethod
    def of(cls, owner: str, controller: ControllerConfig) -> Caller:
        """An allow-listed controller, for itself."""
        return cls(owner, Standing.CONTROLLER, controller)

    @classmethod
    def ask_step(cls, owner: str, controller: ControllerConfig, reason: str) -> Caller:
        """The model of ``owner``'s ask turn, under the controller's role."""
        return cls(owner, Standing.ASK, controller, reason)

    @property
    def is_local(self) -> bool:
        """The local owner: the one caller with no controller."""
        return self.standing is Standing.LOCAL

    def who(self) -> str:
        """The requester as the approver reads it."""
        assert self.controller is not None
        name = self.controller.name or npub_encode(self.owner)[:20] + "…"
        return f"ask (a model, for {name})" if self.standing is Standing.ASK else name

    def approver(self) -> str | None:
        """Who consents: the controller's approver; for an ask step without one, the
        controller itself (the model is not the person)."""
        if self.controller is None:
            return None
        if self.standing is Standing.ASK:
            return self.controller.approver or self.owner
        return self.controller.approver


def check_place(registry: Registry, caller: Caller, request: Request, logged_in: bool) -> None:
    """``NOT_LOGGED_IN``, ``FORBIDDEN`` or ``UNKNOWN_TOOL`` unless the request may come from
    where it comes from; the role is :func:`check_role`'s."""
    tool, params = request.tool, request.params
    if tool not in LOGIN_TOOLS and not logged_in:
        raise BrowserdError(ErrorCode.NOT_LOGGED_IN, NOT_LOGGED_IN_MESSAGE)
    if caller.standing is Standing.ASK:
        if tool in LOCAL_ONLY or tool in TURN_TOOLS or registry.local_only(tool, params):
            raise BrowserdError(ErrorCode.FORBIDDEN, f"{tool} is not for ask.")
    elif caller.standing is Standing.CONTROLLER:
        if tool in LOCAL_ONLY:
            raise BrowserdError(
                ErrorCode.FORBIDDEN,
                f"{tool} works only on the local control channel, never over messages.",
            )
        if registry.local_only(tool, params):
            raise BrowserdError(ErrorCode.FORBIDDEN, NO_STREAM_BY_MESSAGE.format(tool))
    elif tool in TURN_TOOLS:
        raise BrowserdError(
            ErrorCode.FORBIDDEN,
            f"{tool} works over direct messages only: an ask turn's steps are approved by DM.",
        )
    if not (caller.is_local and tool in LOCAL_ONLY):  # the daemon's own, not the registry's
        registry.get(tool)  # UNKNOWN_TOOL before anything else


def permits(registry: Registry, role: Role, tool: str, params: dict[str, Any]) -> bool:
    """Whether ``role`` may run ``tool`` with ``params``: full, read, or an explicit list.

    The registry judges a request by every tool it would run (a batch's commands, a find's
    action), so neither can smuggle a gated tool past a "read" role or a tool list.  A "read"
    role never runs what ``spends`` the owner's model keys (``ask``): a list must name it.
    ``resume`` gives back one's own turn: whoever may ask may resume.
    """
    if tool == "resume":
        tool, params = "ask", {}
    if role == "full":
        return True
    if role == "read":
        return not registry.is_gated(tool, params) and not registry.get(tool).spends
    return all(name in role for name in registry.tools_run_by(tool, params))


def check_role(registry: Registry, controller: ControllerConfig, request: Request) -> None:
    """``FORBIDDEN`` unless the controller's role permits the request."""
    if not permits(registry, controller.role, request.tool, request.params):
        raise BrowserdError(
            ErrorCode.FORBIDDEN,
            f"{request.tool} is not allowed for this key (role {controller.role!r}).",
        )


def may_list(registry: Registry, role: Role, tool: str) -> bool:
    """Whether ``role`` may run ``tool`` with some params: what its catalog shows.

    A batch is judged by what is in it, so a role lists it when it could run one at all.
    """
    try:
        return permits(registry, role, tool, {})
    except BrowserdError:
        return role in ("full", "read") or tool in role


def role_catalog(registry: Registry, controller: ControllerConfig) -> dict[str, Any]:
    """``help`` for a controller: its role, whether it has an approver, and its tools only.

    Every role may ask: an agent (``mcp --to``) learns from it which tools to offer.  Tools
    kept to this machine (the live view) are refused to every controller, so not listed.
    """
    catalog = describe(registry, None)
    return {
        "role": controller.role,
        "approver": controller.approver is not None,
        "tools": [
            t
            for t in catalog["tools"]
            if may_list(registry, controller.role, t["name"])
            and not registry.get(t["name"]).local_only
        ],
    }


class Admission:
    """The one gate: ``admit`` says whether a caller may run a request now, or raises why."""

    def __init__(
        self,
        registry: Registry,
        browser: BrowserPool,
        controllers: AllowList,
        approvals: Approvals,
        logged_in: Callable[[], bool],
    ) -> None:
        """``logged_in`` says whether an identity is logged in now (the daemon's login);
        ``approvals`` asks approvers by DM and waits for their answer."""
        self.registry, self.browser, self.controllers = registry, browser, controllers
        self.approvals, self.logged_in = approvals, logged_in

    async def admit(
        self, caller: Caller, request: Request, waiting: Waiting | None = None
    ) -> Element | None:
        """Whether ``caller`` may run ``request`` now; raises the reason when not.

        Login state, where the tool may be asked from, the role, and consent, for which a
        gated command (and an ask step that can send data out) is held here until its
        approver answers; ``waiting(seconds)`` is told when it is.  Returns the element
        consent was judged on (an ask step names it in its transcript), when one was read.
        """
        check_place(self.registry, caller, request, self.logged_in())
        if caller.controller is None:
            return None  # the local owner: full role, no approval
        if caller.standing is Standing.CONTROLLER and request.tool == "help":
            return None  # every role may ask what it may run
        check_role(self.registry, caller.controller, request)
        if request.tool == "ask":
            return None  # each of its steps is admitted in turn
        return await self._consent_for(caller, request, waiting)

    async def _consent_for(
        self, caller: Caller, request: Request, waiting: Waiting | None
    ) -> Element | None:
        """Hold the request for its approver when consent is needed (``consent.needs_consent``
        for an ask step: a commit always asks); the element it was judged on."""
        assert caller.controller is not None
        approver = caller.approver()
        gated = self.registry.is_gated(request.tool, request.params)
        element = None
        if caller.standing is Standing.CONTROLLER:
            if approver is None or not gated:
                return None
            session = await self.browser.session(caller.owner)
            what = await describe_action(self.registry, session, request)
        else:
            sends = self.registry.sends(request.tool, request.params)
            through = self.registry.get(request.tool).delegates is not None
            # Read only where consent turns on it: reading costs a full snapshot of the page.
            judged = gated and not through
            session = await self.browser.session(caller.owner)
            element = await target_of(session, request.tool, request.params) if judged else None
            commit = judged and commits(request.tool, request.params, element)
            auto = caller.controller.ask.auto_approve
            if not needs_consent(request.tool, gated or sends, through, commit, auto):
                return element
            what = await describe_action(self.registry, session, request, element)
            what += f". Why: {caller.reason}" if caller.reason else ""
        assert approver is not None
        await self.approvals.ask(
            caller.controller, approver, request.tool, caller.who(), what, waiting
        )
        recorder = session.stream.recorder
        if recorder is not None:  # a recording shows who approved what, and when
            recorder.begin(f"approved by {npub_encode(approver)[:16]}…: {what}")
            recorder.end()  # a moment, not a running step: its command is the next one
        return element

    async def decide(self, sender: str, approve: bool, code: str) -> str:
        """An ``approve``/``deny`` from a known key; the answer to send it back."""
        return await self.approvals.decide(sender, approve, code, self.controllers.get(sender))

    def check_files_in(self, sender: str) -> None:
        """``FORBIDDEN`` unless ``sender`` is a controller whose role may upload: a file
        message is kept only for ``upload``."""
        controller = self.controllers.get(sender)
        if controller is None or not may_list(self.registry, controller.role, "upload"):
            raise BrowserdError(
                ErrorCode.FORBIDDEN, "Files are kept only for a controller that may upload."
            )
