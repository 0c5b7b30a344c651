"""Reading element state, and finding elements by what they mean: refs that later commands use."""

import re

import pytest


@pytest.fixture
async def page(call, site_url):
    opened = await call(f"open {site_url}/catalog.html")
    assert opened["success"], opened
    return call


async def test_values_never_include_a_password(page):
    assert (await page("get_value #city"))["data"]["value"] == "Lyon"
    secret = await page("get_value #secret")
    assert secret["data"]["filled"] is True and "hunter2" not in str(secret)
    assert (await page("get_value #agree"))["data"]["checked"] is False
    assert (await page("get_value #fruit"))["data"]["value"] == "a"
    assert (await page("get_value #said"))["error"]["code"] == "REFUSED"


async def test_count_box_styles_and_states(page):
    assert (await page("get_count button.save"))["data"]["count"] == 2
    assert (await page("get_count main"))["data"]["count"] == 0
    assert (await page("get_count a[[["))["error"]["code"] == "INVALID_PARAMS"

    box = (await page("get_box #styled"))["data"]["box"]
    assert box["width"] == 120 and box["in_viewport"] is True

    styles = (await page("get_styles #styled"))["data"]["styles"]
    assert styles["color"] == "rgb(255, 0, 0)" and styles["font-size"] == "20px"
    assert "display" in styles and len(styles) > 10
    asked = await page(
        {"tool": "get_styles", "params": {"selector": "#styled", "properties": ["width"]}}
    )
    assert asked["data"]["styles"] == {"width": "120px"}
    bad = await page(
        {"tool": "get_styles", "params": {"selector": "#styled", "properties": ["x;y"]}}
    )
    assert bad["error"]["code"] == "INVALID_PARAMS"

    assert (await page("is_visible #hidden"))["data"]["visible"] is False
    assert (await page("is_visible #styled"))["data"]["visible"] is True
    assert (await page("is_enabled #gone"))["data"]["enabled"] is False
    assert (await page("is_enabled #twice"))["data"]["enabled"] is True
    assert (await page("is_checked #styled"))["error"]["code"] == "REFUSED"


async def test_find_returns_refs_that_later_commands_resolve(page):
    snap = (await page("snapshot -i"))["data"]["snapshot"]
    twice = re.search(r'button "Double me" @(\w+)', snap).group(1)

    found = await page("find_role button Go")
    match = found["data"]["matches"][0]
    assert found["data"]["count"] == 1 and match["role"] == "button" and match["name"] == "Go"
    assert (await page(f"click {match['ref']}"))["data"]["verified"]
    assert (await page("get_text #said"))["data"]["text"] == "went"
    # the snapshot's refs still resolve after find took its own snapshots
    assert (await page(f"dblclick @{twice}"))["data"]["verified"]

    for command, role in (
        ("find_label City", "textbox"),
        ("find_placeholder Your city", "textbox"),
        ("find_alt Company logo", "img"),
        ("find_testid go-button", "button"),
        ("find_text Styled text", "generic"),
    ):
        result = await page(command)
        assert result["data"]["matches"][0]["role"] == role, (command, result)
        assert (await page(f"get_box {result['data']['matches'][0]['ref']}"))["success"]
    # no node of its own in the accessibility tree, so no ref: a selector instead
    titled = (await page("find_title Tooltip here"))["data"]["matches"][0]
    assert titled["ref"] is None and titled["selector"] == "#tipped"
    hidden = (await page("find_text Invisible"))["data"]["matches"][0]
    assert (await page(f"is_visible {hidden['selector']}"))["data"]["visible"] is False

    saves = await page("find_role button Save --exact")
    assert (
        saves["data"]["count"] == 2
        and saves["data"]["matches"][0]["ref"] != saves["data"]["matches"][1]["ref"]
    )
    first, last = await page("find_first button.save"), await page("find_last button.save")
    nth = await page("find_nth 1 button.save")
    assert first["data"]["matches"][0]["ref"] == saves["data"]["matches"][0]["ref"]
    assert last["data"]["matches"][0]["ref"] == nth["data"]["matches"][0]["ref"]
    assert (await page("find_text Nothing like this"))["error"]["code"] == "ELEMENT_NOT_FOUND"


async def test_find_acts_through_the_tools_own_checks(page):
    acted = await page("find_testid go-button --action click")
    assert acted["data"]["action"] == "click" and acted["data"]["result"]["verified"], acted
    filled = await page("find_label City --action fill --value Paris")
    assert filled["data"]["result"]["ok"] is True
    assert (await page("get_value #city"))["data"]["value"] == "Paris"
    ticked = await page("find_label Agree --action check")
    assert ticked["data"]["result"]["checked"] is True

    ambiguous = await page("find_role button Save --action click")
    assert ambiguous["error"]["code"] == "AMBIGUOUS"
    assert (await page("find_nth 0 button.save --action click"))["success"]
    password = await page("find_label Secret --action fill --value x")
    assert password["error"]["code"] == "REFUSED"  # fill's own password rule
    missing = await page("find_text Nope --action click")
    assert missing["error"]["code"] == "ELEMENT_NOT_FOUND"
    assert (await page("find_label City --action fill"))["error"]["code"] == "INVALID_PARAMS"
