"""Every tool is declared once: name, description, params model, policy, handler.

The registry derives the rest from that record: validation, dispatch, the JSON Schema
export (for MCP and ``help``), the catalog table, and the answers a policy needs (is this
request gated, which tools would it run, what MCP annotations does a tool carry).  A tool
never parses its params by hand; it receives an instance of its pydantic model.

The policy is in explicit fields, never in the family name (which is for display):

- ``gated``: it changes the page or the browser's state, so a "read" role may not run it
  and an approver is asked first;
- ``read_only``: it changes nothing at all (MCP's ``readOnlyHint``); free tools are read-only
  unless they move the page (scrolling);
- ``destructive``: it changes something outside the page: files (downloads, uploads, saved
  state, recordings) or what outlives the page (cookies, local storage);
- ``idempotent``: running it twice with the same params does no more than once;
- ``needs_session``: it runs on a browser session, under its lock (``help`` does not);
- ``waits``: it waits for the page to change, so the reply's state is read fresh;
- ``reports_place``: where the tab is, is its answer (it goes somewhere, or lists or closes
  tabs and windows), so its text reply always ends with the tab's line, news or not;
- ``local_only``: it works on this machine only (the live view's stream): refused over
  messages and to ``ask``;
- ``sends``: it can carry data off the machine: it reaches an address it is given (scrape,
  open, a download by url) or runs script that can fetch anything (eval), so ``ask`` holds it
  for the person even when it is free, and no agent host is told to run it unasked;
- ``reads_secrets``: it shows what a site keeps for the person (cookies, storage, request
  details, the clipboard), which no agent host is told to run unasked;
- ``spends``: it runs on the owner's model API keys (``ask``), so a "read" role may not run
  it: only "full" or a list that names it;
- ``delegates(params)``: the calls it hands on (a batch's commands, a find's action), so a
  policy judges those too; ``delegates_only``: it does nothing but run them (a batch);
- ``approval(session, params, target)``: how an approver reads the call, for a tool whose
  params alone would not say it (the vault's: which value of which entry goes where).

A handler with a third parameter gets a ``ToolContext``: the registry it was called through
(tools that run tools) and what the owner reaches beyond the pages (``browser.reach``: the
network policy, the egress proxy, saved states, the vault).  Every call on a session goes
through the session's ``actions`` door (``browser/actions.py``), announced once as it starts
and once as it ends.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from ..browser.reach import Reach
from ..errors import BrowserdError, ErrorCode

P = TypeVar("P", bound=BaseModel)
S = TypeVar("S")
Handler = Callable[..., Awaitable[Any]]
H = TypeVar("H", bound=Handler)
Call = tuple[str, dict[str, Any]]
Delegates = Callable[[dict[str, Any]], list[Call]]
Approval = Callable[[Any, dict[str, Any], str], Awaitable[str]]


class Params(BaseModel):
    """Base for every tool's params: unknown keys are an error, not silently dropped.

    Each model's validator is built on its first use, not at import: the daemon imports
    every tool's params while Chromium starts, and most tools are never called.
    """

    model_config = ConfigDict(extra="forbid", populate_by_name=True, defer_build=True)


class NoParams(Params):
    """For tools that take nothing."""


@dataclass(frozen=True)
class ToolContext:
    """What a tool gets beside its session and params, when its handler asks (a third one)."""

    registry: Registry  # the one it was called through: what a batch's commands run in
    reach: Reach | None  # the owner's services; None for a tool that runs without a session


@dataclass(frozen=True)
class Tool(Generic[P]):
    """One tool: what a caller may send, what it may change, and what runs."""

    name: str
    family: str
    description: str
    params: type[P]
    gated: bool
    handler: Handler
    args: tuple[str, ...] = ()
    flags: dict[str, str] = field(default_factory=dict)
    read_only: bool = True
    destructive: bool = False
    idempotent: bool = True
    needs_session: bool = True
    waits: bool = False
    reports_place: bool = False
    local_only: bool = False
    sends: bool = False
    reads_secrets: bool = False
    spends: bool = False
    delegates: Delegates | None = None
    delegates_only: bool = False
    takes_context: bool = False
    approval: Approval | None = None

    def schema(self) -> dict[str, Any]:
        """The JSON Schema of this tool's params, with its description."""
        return {
            "name": self.name,
            "family": self.family,
            "description": self.description,
            "gated": self.gated,
            "params": self.params.model_json_schema(),
        }

    def annotations(self) -> dict[str, bool]:
        """MCP's tool annotations, read off the policy fields."""
        return {
            "readOnlyHint": self.read_only,
            "destructiveHint": self.destructive,
            "idempotentHint": self.idempotent,
            "openWorldHint": self.needs_session,  # a browser reaches whatever the page does
        }

    async def run(self, registry: Registry, session: Any, params: BaseModel) -> Any:
        """Run the handler, through the session's door for actions when it runs on one; a
        handler that takes a context gets the registry it was called through and the reach."""
        args: tuple[Any, ...] = (session, params)
        if self.takes_context:
            args += (ToolContext(registry, getattr(session, "reach", None)),)
        actions = getattr(session, "actions", None) if self.needs_session else None
        if actions is None:  # help, or a stand-in for a session (a unit test's)
            return await self.handler(*args)
        async with actions.around(self.name, params, session.active_tab):
            return await self.handler(*args)


class Registry:
    """A catalog of tools keyed by name."""

    def __init__(self) -> None:
        self._tools: dict[str, Tool[Any]] = {}

    def tool(
        self,
        name: str,
        *,
        family: str,
        gated: bool,
        params: type[BaseModel] = NoParams,
        args: tuple[str, ...] = (),
        flags: dict[str, str] | None = None,
        read_only: bool | None = None,
        destructive: bool = False,
        idempotent: bool | None = None,
        needs_session: bool = True,
        waits: bool = False,
        reports_place: bool = False,
        local_only: bool = False,
        sends: bool = False,
        reads_secrets: bool = False,
        spends: bool = False,
        delegates: Delegates | None = None,
        delegates_only: bool = False,
        approval: Approval | None = None,
    ) -> Callable[[H], H]:
        """Decorator: register ``handler(session, params)``; its docstring is the description.

        ``args`` and ``flags`` shape the text grammar: the params filled by bare words in
        order (``"target"`` is a ref or selector, a leading ``*`` takes the rest of the
        line) and single-letter flags mapped to params (``{"i": "interactive"}``).  The
        policy fields are described in the module's docstring: ``read_only`` defaults to
        ``not gated`` and ``idempotent`` to ``read_only``.  A handler with a third
        parameter, ``handler(session, params, ctx)``, gets its ``ToolContext``.
        """

        def register(handler: H) -> H:
            doc = inspect.getdoc(handler) or ""
            description = doc.strip().split("\n\n")[0].replace("\n", " ")
            if not description:
                raise ValueError(f"tool {name!r} needs a docstring: it becomes its description")
            quiet = not gated if read_only is None else read_only
            self.add(
                Tool(
                    name,
                    family,
                    description,
                    params,
                    gated,
                    handler,
                    args,
                    flags or {},
                    read_only=quiet,
                    destructive=destructive,
                    idempotent=quiet if idempotent is None else idempotent,
                    needs_session=needs_session,
                    waits=waits,
                    reports_place=reports_place,
                    local_only=local_only,
                    sends=sends,
                    reads_secrets=reads_secrets,
                    spends=spends,
                    delegates=delegates,
                    delegates_only=delegates_only,
                    takes_context=len(inspect.signature(handler).parameters) == 3,
                    approval=approval,
                )
            )
            return handler

        return register

    def add(self, tool: Tool[Any]) -> None:
        """Register an already declared tool."""
        if tool.name in self._tools:
            raise ValueError(f"tool {tool.name!r} registered twice")
        self._tools[tool.name] = tool

    def include(self, other: Registry) -> None:
        """Add every tool of ``other`` (a family module's registry) to this one."""
        for tool in other:
            self.add(tool)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __iter__(self) -> Iterator[Tool[Any]]:
        return iter(self._tools.values())

    def __len__(self) -> int:
        return len(self._tools)

    def get(self, name: str) -> Tool[Any]:
        """The tool called ``name``, or ``UNKNOWN_TOOL`` naming the nearest ones."""
        try:
            return self._tools[name]
        except KeyError:
            close = [t for t in self._tools if t.startswith(name[:3])][:5] if name else []
            hint = f" Did you mean: {', '.join(close)}?" if close else ""
            raise BrowserdError(
                ErrorCode.UNKNOWN_TOOL, f"Unknown tool {name!r}.{hint} Send 'help' for the list."
            ) from None

    def validate(self, name: str, params: dict[str, Any] | None) -> tuple[Tool[Any], BaseModel]:
        """Look up the tool and validate its params; ``INVALID_PARAMS`` says what was wrong."""
        tool = self.get(name)
        try:
            return tool, tool.params.model_validate(params or {})
        except ValidationError as exc:
            raise BrowserdError(ErrorCode.INVALID_PARAMS, describe_validation(name, exc)) from None

    async def call(self, session: Any, name: str, params: dict[str, Any] | None) -> Any:
        """Validate and run one tool against ``session``."""
        tool, model = self.validate(name, params)
        return await tool.run(self, session, model)

    def is_gated(self, name: str, params: dict[str, Any]) -> bool:
        """Whether running ``name`` with ``params`` changes anything: what a role check needs.

        A tool that delegates is gated exactly when a call it hands on is (a batch of reads
        is free, a find without an action too); any other tool is as it was declared.
        """
        tool = self.get(name)
        if tool.delegates is None:
            return tool.gated
        return any(self.is_gated(inner, p) for inner, p in tool.delegates(params))

    def tools_run_by(self, name: str, params: dict[str, Any]) -> list[str]:
        """Every tool running ``name`` with ``params`` would run, in order.

        A find and its action; a batch's commands (and their actions), not the batch
        itself, which only carries them.  A malformed delegating request is
        ``INVALID_PARAMS``, never an empty list a policy could wave through.
        """
        tool = self.get(name)
        if tool.delegates is None:
            return [name]
        inner = [t for call, p in tool.delegates(params) for t in self.tools_run_by(call, p)]
        return inner if tool.delegates_only else [name, *inner]

    def sends(self, name: str, params: dict[str, Any]) -> bool:
        """Whether running ``name`` with ``params`` would run a tool that can send data out."""
        return any(self.get(t).sends for t in self.tools_run_by(name, params))

    def unasked_safe(self, name: str) -> bool:
        """Whether an agent host may run ``name`` without asking anyone: it changes nothing,
        sends nothing out and shows no secret."""
        tool = self.get(name)
        return tool.read_only and not (tool.sends or tool.reads_secrets)

    def local_only(self, name: str, params: dict[str, Any]) -> bool:
        """Whether running ``name`` with ``params`` would run a tool kept to this machine."""
        return any(self.get(t).local_only for t in self.tools_run_by(name, params))

    def schemas(self) -> list[dict[str, Any]]:
        """Every tool's schema, in registration order."""
        return [t.schema() for t in self._tools.values()]


def describe_validation(tool: str, exc: ValidationError) -> str:
    """Turn pydantic's errors into one line a person can act on, without echoing values."""
    parts = []
    for err in exc.errors(include_input=False, include_url=False):
        where = ".".join(str(p) for p in err["loc"]) or "params"
        parts.append(f"{where}: {err['msg']}")
    return f"Invalid params for {tool}: " + "; ".join(parts)
