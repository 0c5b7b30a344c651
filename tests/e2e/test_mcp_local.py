"""``nostr-browserd mcp --local`` driven by the mcp SDK's own stdio client, on the test site."""

from __future__ import annotations

import base64
from contextlib import AbstractAsyncContextManager
from pathlib import Path

import mcp.types as types
from mcp import ClientSession

from nostr_browserd.catalog import REGISTRY
from tests.fixtures.browser import SANDBOX
from tests.fixtures.daemon import wait_until
from tests.fixtures.mcp_client import connect, ref_of


def local_config(tmp_path: Path) -> Path:
    """A config whose state (audit log, downloads…) lives in the test's directory."""
    path = tmp_path / "config.toml"
    path.write_text(
        f'[state]\ndir = "{tmp_path / "state"}"\n[browser]\ntimeout_ms = 5000\n'
        f"sandbox = {str(SANDBOX).lower()}\n"  # Chromium refuses its sandbox to root
        "[local]\nenabled = false\n"
    )
    return path


def local(tmp_path: Path) -> AbstractAsyncContextManager[ClientSession]:
    """``mcp --local`` with the test's own state directory."""
    return connect("--local", "--config", str(local_config(tmp_path)))


async def test_tools_list_is_the_registry_with_its_annotations(tmp_path: Path) -> None:
    async with local(tmp_path) as session:
        listed = (await session.list_tools()).tools
    assert [t.name for t in listed] == [t.name for t in REGISTRY]
    for item in listed:
        tool = REGISTRY.get(item.name)
        assert item.description == tool.description
        assert item.input_schema == tool.params.model_json_schema()
        hints = item.annotations
        assert hints is not None
        assert hints.read_only_hint is tool.read_only
        assert hints.destructive_hint is tool.destructive
        assert hints.idempotent_hint is tool.idempotent
        assert hints.open_world_hint is tool.needs_session
    by_name = {t.name: t.annotations for t in listed}
    assert by_name["snapshot"].read_only_hint and not by_name["snapshot"].destructive_hint
    assert not by_name["click"].read_only_hint
    assert by_name["download"].destructive_hint and not by_name["help"].open_world_hint


async def test_open_snapshot_fill_click_screenshot_pdf(tmp_path: Path, site_url: str) -> None:
    async with local(tmp_path) as session:
        opened = await session.call_tool("open", {"url": f"{site_url}/form.html"})
        assert not opened.is_error, opened
        assert "Form" in opened.content[0].text

        snap = await session.call_tool("snapshot", {"interactive": True})
        assert not snap.is_error
        text = snap.content[0].text
        name_ref = ref_of(text, 'textbox "Name')
        send_ref = ref_of(text, 'button "Send"')

        filled = await session.call_tool("fill", {"ref": name_ref, "value": "Ada"})
        assert not filled.is_error, filled.content[0].text
        clicked = await session.call_tool("click", {"ref": send_ref})
        assert not clicked.is_error, clicked.content[0].text
        got = await session.call_tool("get_text", {"selector": "#out"})
        assert "sent Ada" in got.content[0].text

        shot = await session.call_tool("screenshot", {})
        printed = await session.call_tool("pdf", {})

        unknown = await session.call_tool("clik", {})
        bad = await session.call_tool("click", {"ref": name_ref, "nonsense": 1})
        stale = await session.call_tool("click", {"ref": "@e999"})

    assert not shot.is_error
    image = shot.content[0]
    assert image.type == "image" and image.mime_type == "image/png"
    assert base64.b64decode(image.data).startswith(b"\x89PNG\r\n\x1a\n")
    # the result's fields come along as text; the tab's line only when it is news (not here)
    assert shot.content[1].text.startswith("mime: image/png\nbytes: ")

    assert not printed.is_error, printed.content
    resource = printed.content[0]
    assert resource.type == "resource" and resource.resource.mime_type == "application/pdf"
    assert base64.b64decode(resource.resource.blob).startswith(b"%PDF")

    assert unknown.is_error and unknown.content[0].text.startswith("UNKNOWN_TOOL: ")
    assert bad.is_error and bad.content[0].text.startswith("INVALID_PARAMS: ")
    assert stale.is_error and stale.content[0].text.startswith("STALE_REF: ")


async def test_caps_and_tools_limit_the_list(tmp_path: Path) -> None:
    config = str(local_config(tmp_path))
    async with connect(
        "--local", "--config", config, "--caps", "navigate", "--tools", "snapshot"
    ) as session:
        names = {t.name for t in (await session.list_tools()).tools}
        refused = await session.call_tool("click", {"ref": "@e1"})
    expected = {t.name for t in REGISTRY if t.family == "navigate"} | {"snapshot"}
    assert names == expected
    assert refused.is_error and "not offered" in refused.content[0].text


async def test_browser_events_arrive_as_log_notices(tmp_path: Path, site_url: str) -> None:
    notices: list[types.LoggingMessageNotificationParams] = []

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        notices.append(params)

    config = str(local_config(tmp_path))
    async with connect("--local", "--config", config, logging_callback=on_log) as session:
        await session.call_tool("open", {"url": f"{site_url}/dialogs.html"})
        clicked = await session.call_tool("click", {"selector": "#alert"})
        await wait_until(lambda: any(n.data.get("event") == "dialog" for n in notices))
        await session.call_tool("dialog_accept", {})
    assert "alert: 'hello' (accepted)" in clicked.content[0].text.lower()
    dialog = next(n for n in notices if n.data.get("event") == "dialog")
    assert dialog.logger == "browser" and dialog.level == "warning"
    assert dialog.data["message"] == "Hello"
