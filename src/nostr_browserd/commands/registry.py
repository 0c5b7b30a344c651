"""Every tool is declared once: name, description, params model, gated or free, handler.

The registry derives the rest from that record: validation, dispatch, the JSON Schema
export (for MCP and ``help``) and the catalog table.  A tool never parses its params by
hand; it receives an instance of its pydantic model.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from ..errors import BrowserdError, ErrorCode

P = TypeVar("P", bound=BaseModel)
S = TypeVar("S")
Handler = Callable[[Any, Any], Awaitable[Any]]


class Params(BaseModel):
    """Base for every tool's params: unknown keys are an error, not silently dropped."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class NoParams(Params):
    """For tools that take nothing."""


@dataclass(frozen=True)
class Tool(Generic[P]):
    """One tool: what a caller may send, whether it changes state, and what runs."""

    name: str
    family: str
    description: str
    params: type[P]
    gated: bool
    handler: Handler
    args: tuple[str, ...] = ()
    flags: dict[str, str] = field(default_factory=dict)

    def schema(self) -> dict[str, Any]:
        """The JSON Schema of this tool's params, with its description."""
        return {
            "name": self.name,
            "family": self.family,
            "description": self.description,
            "gated": self.gated,
            "params": self.params.model_json_schema(),
        }


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
    ) -> Callable[[Handler], Handler]:
        """Decorator: register ``handler(session, params)``; its docstring is the description.

        ``args`` and ``flags`` shape the text grammar: the params filled by bare words in
        order (``"target"`` is a ref or selector, a leading ``*`` takes the rest of the
        line) and single-letter flags mapped to params (``{"i": "interactive"}``).
        """

        def register(handler: Handler) -> Handler:
            doc = inspect.getdoc(handler) or ""
            description = doc.strip().split("\n\n")[0].replace("\n", " ")
            if not description:
                raise ValueError(f"tool {name!r} needs a docstring: it becomes its description")
            self.add(Tool(name, family, description, params, gated, handler, args, flags or {}))
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
        return await tool.handler(session, model)

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
