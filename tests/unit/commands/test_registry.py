"""The registry's policy answers come from each tool's declared fields, never its family."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest

from nostr_browserd.catalog import REGISTRY
from nostr_browserd.commands.registry import NoParams, Registry, ToolContext
from nostr_browserd.errors import BrowserdError

DESTRUCTIVE = {
    "upload",
    "download",
    "state_save",
    "state_load",
    "cookies_set",
    "cookies_clear",
    "storage_local_set",
    "storage_local_clear",
    "har_stop",
    "trace_stop",
    "batch",
    "vault_add",
    "vault_remove",
}


def test_the_policy_fields_agree_with_each_other():
    for tool in REGISTRY:
        assert not (tool.read_only and tool.gated), tool.name  # a gated tool changes something
        assert not tool.destructive or tool.gated, tool.name  # so does a destructive one
        assert tool.idempotent or not tool.read_only, tool.name
    assert {t.name for t in REGISTRY if t.destructive} == DESTRUCTIVE
    assert [t.name for t in REGISTRY if not t.needs_session] == ["help"]
    waits = {t.name for t in REGISTRY if t.waits}
    assert waits == {t.name for t in REGISTRY if t.name.startswith("wait")}
    delegating = {t.name for t in REGISTRY if t.delegates}
    assert delegating == {"batch"} | {t.name for t in REGISTRY if t.name.startswith("find_")}
    assert [t.name for t in REGISTRY if t.delegates_only] == ["batch"]
    free_but_acting = {t.name for t in REGISTRY if not t.gated and not t.read_only}
    # scrolling moves the page; tab_switch, which tab the next command reads; ask and resume
    # start and give back a turn whose steps are each judged; the live view's switches
    # change the daemon, not the page
    assert free_but_acting == {
        "scroll",
        "scroll_into_view",
        "tab_switch",
        "ask",
        "resume",
        "stream_enable",
        "stream_disable",
        # a monitor's pause and removal, and schedules, whose every run is judged on its own
        "monitor_pause",
        "monitor_remove",
        *(f"schedule_{verb}" for verb in ("add", "remove", "pause", "resume", "run")),
    }
    local_only = {t.name for t in REGISTRY if t.local_only}
    assert local_only == {"stream_enable", "stream_status", "stream_disable"}
    # What can carry data off the machine: an address it reaches, or script it runs.
    sends = {t.name for t in REGISTRY if t.sends}
    reaching = {"scrape", "open", "tab_new", "window_new", "download", "diff_url"}
    monitors = {"monitor_add", "monitor_resume", "monitor_check"}  # each check reaches one
    assert sends == reaching | monitors | {"eval", "wait_for_fn"}
    # What shows what a site keeps for the person.
    storage = [
        f"storage_{area}_{get}" for area in ("local", "session") for get in ("get", "get_key")
    ]
    secrets = {"cookies_get", *storage, "network_requests", "network_request", "clipboard_read"}
    assert {t.name for t in REGISTRY if t.reads_secrets} == secrets
    assert [t.name for t in REGISTRY if t.spends] == ["ask", "resume"]  # resume: the turn goes on
    # Where the tab is, is the answer: going somewhere, and listing or closing tabs and windows.
    places = {t.name for t in REGISTRY if t.reports_place}
    goes = {"open", "back", "forward", "reload", "tab_new", "tab_switch", "window_new"}
    lists_or_closes = {"tab_list", "tab_close", "close", "close_all"}
    assert places == goes | lists_or_closes | {"window_list", "window_close"}


@pytest.mark.parametrize(
    ("name", "hints"),
    [
        ("get_text", (True, False, True, True)),
        ("click", (False, False, False, True)),
        ("download", (False, True, False, True)),
        ("set_viewport", (False, False, True, True)),
        ("help", (True, False, True, False)),
    ],
)
def test_mcp_annotations_are_read_off_the_fields(name, hints):
    keys = ("readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint")
    assert REGISTRY.get(name).annotations() == dict(zip(keys, hints, strict=True))


def test_a_malformed_delegating_request_is_an_error_never_an_empty_list():
    for params in ({"commands": []}, {"commands": [{"tool": "batch"}]}):
        with pytest.raises(BrowserdError):
            REGISTRY.tools_run_by("batch", params)
    with pytest.raises(BrowserdError):
        REGISTRY.is_gated("find_text", {"text": "a", "action": "frobnicate"})


class Session:
    """Enough of a session for a tool that needs none."""


async def test_handlers_get_the_registry_they_were_called_through():
    """A private registry's own tools answer, not the global catalog's (no import cycle)."""
    mine = Registry()

    @mine.tool("echo", family="meta", gated=False, needs_session=False)
    async def echo(session: Any, params: NoParams, ctx: ToolContext) -> dict[str, Any]:
        """Name the tools of the registry this was called through."""
        return {"tools": [t.name for t in ctx.registry]}

    @mine.tool("plain", family="meta", gated=False)
    async def plain(session: Any, params: NoParams) -> dict[str, Any]:
        """Take no registry."""
        return {"ok": True}

    assert await mine.call(Session(), "echo", {}) == {"tools": ["echo", "plain"]}
    assert await mine.call(Session(), "plain", {}) == {"ok": True}


def test_tool_families_do_not_import_the_catalog():
    """batch and find run other tools through the registry they are given: no cycle back."""
    code = (
        "import sys, nostr_browserd.tools.batch, nostr_browserd.tools.find, "
        "nostr_browserd.commands.protocol; "
        "assert 'nostr_browserd.catalog' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
