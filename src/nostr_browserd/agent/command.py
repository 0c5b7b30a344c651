"""The ``ask`` and ``resume`` commands as the registry declares them: params, text form, help.

The dispatcher runs them (a turn of the model loop needs the controller, the key store and
the person's consent, which a tool handler does not have); the handlers here only refuse to
run anywhere else, such as inside a batch.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from ..commands.registry import NoParams, Params, Registry
from ..errors import BrowserdError, ErrorCode

TOOLS = Registry()


class AskParams(Params):
    """A task in words; or --new (a new conversation) or --stop (end the running turn)."""

    task: str | None = Field(None, max_length=4000, description="what to do, in words")
    provider: Literal["anthropic", "openai", "openrouter"] | None = Field(
        None, description="the model provider (default: the config's)"
    )
    model: str | None = Field(None, max_length=200, description="the model (default: config's)")
    max_tool_calls: int | None = Field(None, ge=1, le=100, description="the cap (default 12)")
    new: bool = Field(False, description="start a new conversation")
    record: bool = Field(
        False, description="a video of the turn and a picture of its steps with the answer"
    )
    stop: bool = Field(False, description="end the running turn")


@TOOLS.tool(
    "ask",
    family="agent",
    gated=False,  # each step it takes is judged (and held for consent) on its own
    params=AskParams,
    args=("*task",),
    read_only=False,  # its steps may change the page: no host should run it unasked
    spends=True,
)
async def ask(session: Any, params: AskParams) -> dict[str, Any]:
    """Have a model do a task on your tabs; you approve each step that changes something.

    Runs one turn of the model loop in your own browser session.  The next ask continues the
    conversation; --new starts a new one; --stop ends a running turn.
    """
    raise BrowserdError(ErrorCode.INVALID_PARAMS, "ask runs only as a message of its own.")


@TOOLS.tool(
    "resume",
    family="agent",
    gated=False,  # it gives the turn back; each step after it is judged on its own
    params=NoParams,
    read_only=False,  # the turn goes on, and its steps may change the page
    spends=True,
)
async def resume(session: Any, params: NoParams) -> dict[str, Any]:
    """Give the browser back to the model when your ask turn handed it to you (handoff).

    The turn goes on after your commands sent before it, from the page as you left it; a
    gated step after it still asks you.
    """
    raise BrowserdError(ErrorCode.INVALID_PARAMS, "resume runs only as a message of its own.")
