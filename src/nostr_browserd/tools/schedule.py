"""Monitors and schedules as the registry declares them: params, text form, policy, help.

The daemon runs them (``daemon/schedule``): a monitor needs its controller, the state store
and a chat to write to, none of which a tool handler has.  The handlers here only refuse to
run anywhere else, such as inside a batch.

- ``monitor add <url> [<selector>] [--every 15m] [--contains X | --missing X]
  [--screenshot]``: gated like ``open`` (one approval names the address, the selector and
  the interval), and it reaches an address (``sends``);
- ``schedule add <when> <command…>``: free to make, since each run is admitted on its own,
  as if the controller sent the command then.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field, model_validator

from ..commands.registry import NoParams, Params, Registry
from ..errors import BrowserdError, ErrorCode

TOOLS = Registry()

WHEN_WORDS = ("every", "daily", "weekdays")


class MonitorAddParams(Params):
    """The page (or one element of it) to watch, how often, and what counts as news."""

    url: str = Field(min_length=1, max_length=2000, description="the address to watch")
    selector: str | None = Field(
        None, max_length=500, description="a CSS selector: watch this element's text only"
    )
    every: str = Field("15m", max_length=12, description="the interval: 30s, 15m, 2h, 1d")
    contains: str | None = Field(
        None, min_length=1, max_length=500, description="write when this text appears"
    )
    missing: str | None = Field(
        None, min_length=1, max_length=500, description="write when this text disappears"
    )
    screenshot: bool = Field(False, description="send a picture of it with each change")

    @model_validator(mode="after")
    def _one_condition(self) -> MonitorAddParams:
        if self.contains is not None and self.missing is not None:
            raise ValueError("give --contains or --missing, not both")
        return self


class MonitorId(Params):
    """Which of your monitors."""

    id: str = Field(pattern=r"^m\d{1,6}$", description="the monitor's id (m1, m2…)")


class ScheduleAddParams(Params):
    """When, and the command to run then, as you would send it."""

    when: str = Field(
        min_length=1,
        max_length=100,
        description='every <interval>, daily HH:MM, weekdays HH:MM or "<cron>" (5 fields)',
    )
    command: str = Field(min_length=1, max_length=4000, description="the command to run")
    tz: str | None = Field(
        None, max_length=64, description="the time zone, Area/City (default: the daemon's)"
    )

    @model_validator(mode="before")
    @classmethod
    def _when_of_two_words(cls, data: Any) -> Any:
        """``schedule add every 15m screenshot``: the interval or time is ``when``'s second
        word, not the command's first (a cron expression comes in quotes)."""
        if not isinstance(data, dict):
            return data
        when, command = data.get("when"), data.get("command")
        if isinstance(when, str) and when.lower() in WHEN_WORDS and isinstance(command, str):
            first, _, rest = command.strip().partition(" ")
            return {**data, "when": f"{when} {first}", "command": rest.strip()}
        return data


class ScheduleId(Params):
    """Which of your schedules."""

    id: str = Field(pattern=r"^s\d{1,6}$", description="the schedule's id (s1, s2…)")


async def _approval(session: Any, params: dict[str, Any], target: str) -> str:
    """What the approver reads for ``monitor add``: the address, the selector, the interval."""
    what = f"monitor {params.get('url')}"
    if params.get("selector"):
        what += f" (the element {params['selector']!r})"
    what += f" every {params.get('every') or '15m'}"
    for word in ("contains", "missing"):
        if params.get(word):
            what += f", writing when it {'contains' if word == 'contains' else 'lacks'}"
            what += f" {params[word]!r}"
    what += ", with a picture" if params.get("screenshot") else ""
    return what + ": after this approval its checks run without asking"


async def _resume_approval(session: Any, params: dict[str, Any], target: str) -> str:
    """What the approver reads for ``monitor resume``."""
    return f"resume monitor {params.get('id')}: its checks run again without asking"


KEEPS = {"gated": False, "read_only": False}  # free, but it changes what the daemon keeps
BY_ID = {"args": ("id",)}
# name, params, description, policy
DECLARED: tuple[tuple[str, type[Params], str, dict[str, Any]], ...] = (
    (
        "monitor_add",
        MonitorAddParams,
        "Watch a page or element and get a message when it changes (or --contains/--missing).",
        {
            "gated": True,
            "args": ("url", "selector"),
            "sends": True,
            "idempotent": False,
            "approval": _approval,
        },
    ),
    (
        "monitor_list",
        NoParams,
        "List your monitors: last check, outcome, last change.",
        {"gated": False},
    ),
    ("monitor_remove", MonitorId, "Remove one of your monitors.", KEEPS | BY_ID),
    (
        "monitor_pause",
        MonitorId,
        "Pause one of your monitors (no checks until resumed).",
        KEEPS | BY_ID,
    ),
    (
        "monitor_resume",
        MonitorId,
        "Resume a paused monitor; it checks again at once.",
        {"gated": True, "sends": True, "idempotent": False, "approval": _resume_approval} | BY_ID,
    ),
    (
        "monitor_check",
        MonitorId,
        "Check one of your monitors now; the reply is what it sees.",
        {"gated": False, "sends": True} | BY_ID,
    ),
    (
        "schedule_add",
        ScheduleAddParams,
        "Run a command at set times (every 15m, daily 08:00, weekdays 07:30, cron); its reply"
        " comes as a message.",
        KEEPS | {"args": ("when", "*command"), "idempotent": False},
    ),
    (
        "schedule_list",
        NoParams,
        "List your schedules: when, the command, the last run.",
        {"gated": False},
    ),
    ("schedule_remove", ScheduleId, "Remove one of your schedules.", KEEPS | BY_ID),
    ("schedule_pause", ScheduleId, "Pause one of your schedules.", KEEPS | BY_ID),
    ("schedule_resume", ScheduleId, "Resume a paused schedule.", KEEPS | BY_ID),
    (
        "schedule_run",
        ScheduleId,
        "Run one of your schedules now.",
        KEEPS | BY_ID | {"idempotent": False},
    ),
)


def _declare(name: str, params: type[Params], doc: str, policy: dict[str, Any]) -> None:
    """Register a tool the daemon runs; its handler only refuses to run anywhere else."""

    async def handler(session: Any, given: Params) -> dict[str, Any]:
        raise BrowserdError(ErrorCode.INVALID_PARAMS, f"{name} runs only as a message of its own.")

    handler.__doc__ = doc
    TOOLS.tool(name, family="schedule", params=params, **policy)(handler)


for declared in DECLARED:
    _declare(*declared)

WATCH_TOOLS = frozenset(tool.name for tool in TOOLS)
