"""Several commands in one message: run in order on the same session, stop at a failure.

The batch runs its commands through the registry it was called through, one after another,
under the lock the protocol already holds.  It is declared gated (it may be) and as
delegating to its commands, so ``Registry.is_gated`` and ``Registry.tools_run_by`` judge a
given batch by every tool in it, a find's action included.
"""

from __future__ import annotations

from typing import Annotated, Any

from playwright.async_api import Error as PlaywrightError
from pydantic import Field, Json, ValidationError

from ..browser.session import Session
from ..commands.protocol import coded
from ..commands.registry import Call, Params, Registry, ToolContext, describe_validation
from ..errors import BrowserdError, ErrorCode

TOOLS = Registry()
MAX_COMMANDS = 50
NESTED = "A batch cannot contain a batch."


class Command(Params):
    """One command of a batch."""

    tool: str = Field(min_length=1, max_length=64)
    params: dict[str, Any] = Field(default_factory=dict)


Commands = Annotated[list[Command], Field(min_length=1, max_length=MAX_COMMANDS)]


class BatchParams(Params):
    """The commands, in order, and whether a failure stops the rest."""

    commands: Commands | Json[Commands] = Field(description="[{tool, params}, …]; JSON in text")
    continue_on_error: bool = Field(False, description="run the rest after a failure")


def commands_of(params: dict[str, Any]) -> list[Call]:
    """The calls a batch with these params hands on, for a policy to judge each one."""
    try:
        batch = BatchParams.model_validate(params)
    except ValidationError as exc:
        raise BrowserdError(ErrorCode.INVALID_PARAMS, describe_validation("batch", exc)) from None
    if any(command.tool == "batch" for command in batch.commands):
        raise BrowserdError(ErrorCode.INVALID_PARAMS, NESTED)
    return [(command.tool, command.params) for command in batch.commands]


async def run_one(registry: Registry, session: Session, command: Command) -> dict[str, Any]:
    """Run one inner command; failures become the protocol's error shape."""
    try:
        if command.tool == "batch":
            raise BrowserdError(ErrorCode.INVALID_PARAMS, NESTED)
        tool, model = registry.validate(command.tool, command.params)
        box: dict[str, Any] = {}

        async def handle() -> None:
            box["data"] = await tool.run(registry, session, model)

        if await session.dialogs.race(handle()):
            note = "A dialog opened: answer it; the batch stopped here."
            return {"tool": command.tool, "success": True, "data": {"note": note}, "dialog": True}
        result = {"tool": command.tool, "success": True, "data": box["data"]}
        if (
            session.dialogs.pending is not None
        ):  # it returned, but left a dialog waiting for an answer
            result["dialog"] = True
        return result
    except (BrowserdError, PlaywrightError) as exc:
        error = coded(session, exc)
    return {"tool": command.tool, "success": False, "error": error.to_dict()}


@TOOLS.tool(
    "batch",
    family="batch",
    gated=True,
    params=BatchParams,
    args=("*commands",),
    destructive=True,
    delegates=commands_of,
    delegates_only=True,
)
async def batch(session: Session, params: BatchParams, ctx: ToolContext) -> dict[str, Any]:
    """Run up to 50 commands in order on this session; stops at the first failure.

    It also stops when a command opens a dialog, which must be answered first.

    Gated when any command in it is gated.  Params: {"commands": [{"tool", "params"}, …]}.
    """
    results = []
    for command in params.commands:
        result = await run_one(ctx.registry, session, command)
        results.append(result)
        if result.get("dialog") or not (result["success"] or params.continue_on_error):
            break
    failed = [i for i, r in enumerate(results) if not r["success"]]
    summary: dict[str, Any] = {"ok": not failed, "ran": len(results), "results": results}
    if failed:
        summary["failed"] = failed
    return summary
