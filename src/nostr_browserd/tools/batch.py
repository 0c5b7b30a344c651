"""Several commands in one message: run in order on the same session, stop at a failure.

The batch runs its commands through the registry, one after another, under the lock the
protocol already holds.  It is registered as gated; ``is_gated`` tells a role check
whether a given batch really is (any inner tool gated, a find's action included), and
``inner_tools`` lists what it would run, so a policy can judge every inner tool.
"""

from __future__ import annotations

from typing import Annotated, Any

from playwright.async_api import Error as PlaywrightError
from pydantic import Field, Json, ValidationError

from ..browser.session import Session
from ..commands.protocol import coded
from ..commands.registry import Params, Registry, describe_validation
from ..errors import BrowserdError, ErrorCode
from .find import action_tool

TOOLS = Registry()
MAX_COMMANDS = 50


class Command(Params):
    """One command of a batch."""

    tool: str = Field(min_length=1, max_length=64)
    params: dict[str, Any] = Field(default_factory=dict)


Commands = Annotated[list[Command], Field(min_length=1, max_length=MAX_COMMANDS)]


class BatchParams(Params):
    """The commands, in order, and whether a failure stops the rest."""

    commands: Commands | Json[Commands] = Field(description="[{tool, params}, …]; JSON in text")
    continue_on_error: bool = Field(False, description="run the rest after a failure")


def inner_tools(params: dict[str, Any]) -> list[str]:
    """Every tool a batch with these params would run (a find's action too), in order."""
    try:
        batch = BatchParams.model_validate(params)
    except ValidationError as exc:
        raise BrowserdError(ErrorCode.INVALID_PARAMS, describe_validation("batch", exc)) from None
    names = []
    for command in batch.commands:
        names.append(command.tool)
        action = action_tool(command.tool, command.params)
        if action:
            names.append(action)
    return names


def is_gated(name: str, params: dict[str, Any]) -> bool:
    """Whether running ``name`` with ``params`` changes anything: what a role check needs.

    A batch is gated when any tool inside it is; a find is gated only with an action.
    """
    registry = catalog()
    if name == "batch":
        return any(is_gated(tool, {}) for tool in inner_tools(params))
    action = action_tool(name, params)
    if name in registry and registry.get(name).family == "find":
        return action is not None and registry.get(action).gated
    return registry.get(name).gated


def catalog() -> Any:
    """The full registry (imported late: the catalog imports this module)."""
    from ..commands.catalog import REGISTRY

    return REGISTRY


async def run_one(session: Session, command: Command) -> dict[str, Any]:
    """Run one inner command; failures become the protocol's error shape."""
    try:
        if command.tool == "batch":
            raise BrowserdError(ErrorCode.INVALID_PARAMS, "A batch cannot contain a batch.")
        tool, model = catalog().validate(command.tool, command.params)
        box: dict[str, Any] = {}

        async def handle() -> None:
            box["data"] = await tool.handler(session, model)

        if await session.race_dialog(handle()):
            note = "A dialog opened: answer it; the batch stopped here."
            return {"tool": command.tool, "success": True, "data": {"note": note}, "dialog": True}
        return {"tool": command.tool, "success": True, "data": box["data"]}
    except (BrowserdError, PlaywrightError) as exc:
        error = coded(session, exc)
    return {"tool": command.tool, "success": False, "error": error.to_dict()}


@TOOLS.tool("batch", family="batch", gated=True, params=BatchParams, args=("*commands",))
async def batch(session: Session, params: BatchParams) -> dict[str, Any]:
    """Run up to 50 commands in order on this session; stops at the first failure.

    It also stops when a command opens a dialog, which must be answered first.

    Gated when any command in it is gated.  Params: {"commands": [{"tool", "params"}, …]}.
    """
    results = []
    for command in params.commands:
        result = await run_one(session, command)
        results.append(result)
        if result.get("dialog") or not (result["success"] or params.continue_on_error):
            break
    failed = [i for i, r in enumerate(results) if not r["success"]]
    summary: dict[str, Any] = {"ok": not failed, "ran": len(results), "results": results}
    if failed:
        summary["failed"] = failed
    return summary
