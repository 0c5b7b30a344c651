"""Interaction beyond click and fill: select, check, dblclick, drag, keyboard, mouse."""

import pytest


@pytest.fixture
async def page(call, site_url):
    opened = await call(f"open {site_url}/catalog.html")
    assert opened["success"], opened
    return call


async def test_select_by_label_value_and_several(page):
    chosen = await page("select #fruit pear")  # a label, in any case
    assert chosen["data"]["ok"] and chosen["data"]["selected"] == ["Pear"], chosen
    assert chosen["data"]["title"] == "fruit p"
    assert (await page("select #fruit a"))["data"]["selected"] == ["Apple"]  # a value
    several = await page(
        {"tool": "select", "params": {"selector": "#toppings", "value": ["Ham", "o"]}}
    )
    assert several["data"]["ok"], several
    assert (await page("get_value #toppings"))["data"]["values"] == ["h", "o"]

    missing = await page("select #fruit Banana")
    assert missing["error"]["code"] == "ELEMENT_NOT_FOUND"
    assert "'Apple', 'Pear'" in missing["error"]["message"]
    assert (await page("select #fruit Rotten"))["error"]["code"] == "REFUSED"
    one_only = await page({"tool": "select", "params": {"selector": "#fruit", "value": ["a", "p"]}})
    assert one_only["error"]["code"] == "INVALID_PARAMS"
    assert (await page("select #agree a"))["error"]["code"] == "REFUSED"


async def test_check_and_uncheck_read_the_state_back(page):
    checked = await page("check #agree")
    assert checked["data"] | {"checked": True, "changed": True} == checked["data"], checked
    assert (await page("check #agree"))["data"]["changed"] is False
    assert (await page("is_checked #agree"))["data"]["checked"] is True
    assert (await page("uncheck #agree"))["data"]["checked"] is False

    stubborn = await page("check #news")  # its handler unticks it again
    assert stubborn["data"]["checked"] is False and "MISMATCH" in stubborn["data"]["note"]
    assert (await page("check #small"))["data"]["checked"] is True
    assert (await page("uncheck #small"))["error"]["code"] == "REFUSED"
    assert (await page("check #off"))["error"]["code"] == "REFUSED"
    assert (await page("check #city"))["error"]["code"] == "REFUSED"


async def test_dblclick_drag_and_scroll_into_view(page):
    double = await page("dblclick #twice")
    assert double["data"]["verified"], double
    assert (await page("get_text #twice"))["data"]["text"] == "double clicked"

    dragged = await page("drag #src #dst")
    assert dragged["data"]["verified"], dragged
    assert (await page("get_text #dst"))["data"]["text"] == "dropped moved"
    assert (await page("drag #src #nowhere"))["error"]["code"] == "ELEMENT_NOT_FOUND"

    far = await page("scroll_into_view #far")
    assert far["data"]["box"]["in_viewport"] is True, far


async def test_keyboard_types_inserts_and_holds_keys(page):
    await page("focus #log")
    typed = await page("keyboard_type hello world")
    assert typed["data"]["verified"], typed
    await page("insert_text !")
    assert (await page("get_value #log"))["data"]["value"] == "hello world!"

    await page("keydown Shift")
    assert (await page("get_attr body data-shift"))["data"]["value"] == "down"
    await page("keyup Shift")
    assert (await page("get_attr body data-shift"))["data"]["value"] == "up"
    assert (await page("keydown NoSuchKey"))["error"]["code"] == "INVALID_PARAMS"

    await page("focus #secret")
    refused = await page("keyboard_type abc")
    assert refused["error"]["code"] == "REFUSED" and "password" in refused["error"]["message"]
    assert (await page("keyboard_type abc --secret"))["success"]


async def test_mouse_moves_presses_and_wheels(page):
    box = (await page("get_box #pad"))["data"]["box"]
    x, y = box["x"] + 20, box["y"] + 20
    assert (await page(f"mouse_move {x} {y}"))["success"]
    assert (await page("get_attr #pad data-moved"))["data"]["value"] == "yes"
    assert (await page("mouse_down"))["data"]["verified"]
    assert (await page("mouse_up right"))["success"]
    assert (await page("mouse_wheel 100"))["success"]
    assert (await page("get_text #events"))["data"]["text"].split() == [
        "mousedown0",
        "mouseup2",
        "wheel0",
    ]
    assert (await page("mouse_move -1 5"))["error"]["code"] == "INVALID_PARAMS"
