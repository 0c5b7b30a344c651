"""Frames and dialogs through the protocol: targets and snapshots inside an iframe, and
the three dialog tools."""

import re

import pytest


@pytest.fixture
async def frames(call, site_url, site2_url):
    opened = await call(f"open {site_url}/frames.html?cross={site2_url}")
    assert opened["success"], opened
    await call("wait_for #cross")
    return call


async def test_targets_and_snapshot_resolve_inside_the_chosen_frame(frames, site2_url):
    call = frames
    # the main frame has no button: a selector there finds nothing
    assert (await call("click button"))["error"]["code"] == "ELEMENT_NOT_FOUND"

    switched = await call("frame switch #cross")
    assert switched["data"]["frame"]["url"] == f"{site2_url}/frame_child.html?other"
    snap = (await call("snapshot"))["data"]["snapshot"]
    assert "Frame button" in snap and "Frames" not in snap  # only the frame, not the heading
    ref = re.search(r'button "Frame button" @(\w+)', snap).group(1)
    assert (await call(f"click @{ref}"))["data"]["verified"]
    port = site2_url.rsplit(":", 1)[1]
    assert (await call("get_text button"))["data"]["text"] == f"Pressed in {port}"
    assert (await call("fill textbox 'x'"))["error"]["code"] == "ELEMENT_NOT_FOUND"
    assert (await call("fill input hello"))["data"]["ok"]
    # reading and waiting without a target happen in the frame too
    assert (await call("eval location.search"))["data"]["result"] == "?other"
    assert (await call("get_count button"))["data"]["count"] == 1
    assert (await call("wait_for input"))["success"]
    assert (await call("get_text"))["data"]["text"].startswith("Pressed in")

    back = await call("frame main")
    assert back["data"]["switched"] and "frame" not in back["data"]
    assert (await call("click button"))["error"]["code"] == "ELEMENT_NOT_FOUND"


async def test_frames_by_ref_name_and_url_and_bad_choices(frames, site_url):
    call = frames
    snap = (await call("snapshot"))["data"]["snapshot"]
    first_iframe = re.search(r"iframe @(\w+)", snap).group(1)
    by_ref = await call(f"frame_switch @{first_iframe}")
    assert by_ref["data"]["frame"]["url"] == f"{site_url}/frame_child.html"
    # a selector now resolves in the same-origin frame
    assert (await call("click button"))["data"]["verified"]
    await call("frame_main")

    by_url = await call("frame_switch --url ?other")
    assert by_url["data"]["frame"]["url"].endswith("?other")
    await call("frame_main")

    assert (await call("frame_switch --url frame_child"))["error"]["code"] == "AMBIGUOUS"
    missing = await call("frame_switch --name nothere")
    assert (
        missing["error"]["code"] == "ELEMENT_NOT_FOUND"
        and "frame_child" in missing["error"]["message"]
    )
    assert (await call("frame_switch h1"))["error"]["code"] == "INVALID_PARAMS"
    assert (await call("frame_switch"))["error"]["code"] == "INVALID_PARAMS"


async def test_losing_the_frame_falls_back_to_main_with_a_note(frames, site_url):
    call = frames
    await call("frame_switch #same")
    # eval runs in the frame: the frame removes itself, so the script's own frame is gone
    await call("eval window.frameElement.remove()")
    after = (await call("get_url"))["data"]
    assert "back to main" in after["frame_note"] and "frame" not in after
    assert "frame_note" not in (await call("get_url"))["data"]  # said once
    assert (await call("get_text h1"))["data"]["text"] == "Frames"

    await call("frame_switch #cross")
    moved = await call(f"open {site_url}/index.html")
    assert "frame_note" in moved["data"] and "frame" not in moved["data"]
    assert (await call("snapshot -i"))["success"]


async def test_dialog_tools(call, site_url):
    await call(f"open {site_url}/dialogs.html")
    status = await call("dialog status")
    assert status["data"]["open"] is False and status["data"]["dialog"] is None
    assert (await call("dialog accept"))["error"]["code"] == "NO_DIALOG"

    await call("click #prompt")
    status = await call("dialog_status")
    assert status["data"]["open"] and status["data"]["dialog"]["type"] == "prompt"
    assert status["data"]["dialog"]["default"] == "anon"
    answered = await call("dialog accept Ada Lovelace")
    assert answered["data"]["answer"] == "accepted"
    assert (await call("get_text #out"))["data"]["text"] == "name=Ada Lovelace"

    await call("click #confirm")
    assert (await call("dialog dismiss"))["data"]["answer"] == "dismissed"
    assert (await call("get_text #out"))["data"]["text"] == "no"
    json_form = await call({"tool": "dialog_accept", "params": {"value": 5}})
    assert json_form["error"]["code"] == "INVALID_PARAMS"


async def test_find_wait_scroll_and_keyboard_use_the_chosen_frame(frames):
    call = frames
    # the main frame has no button: find and the predicate see nothing there
    assert (await call("find_role button"))["error"]["code"] == "ELEMENT_NOT_FOUND"
    assert (await call("eval document.querySelector('button') === null"))["data"]["result"]

    await call("frame_switch #same")
    found = (await call("find_role button"))["data"]
    assert found["count"] == 1 and found["matches"][0]["name"] == "Frame button"
    assert (await call("find_role button --action click"))["data"]["result"]["verified"]
    fn = await call("wait_for_fn () => document.querySelector('button').textContent")
    assert fn["data"]["result"].startswith("Pressed in")
    assert (await call("wait_for_url **/frame_child.html"))["data"]["url"].endswith(
        "/frame_child.html"
    )
    assert (await call("wait_for_load domcontentloaded"))["success"]
    await call("eval document.body.style.height = '5000px'")
    assert (await call("scroll down 300"))["data"]["position"]["height"] >= 5000
    await call("focus input")
    typed = await call("keyboard_type hi")
    assert (
        typed["data"]["verified"]
        and "field values changed in the frame" in typed["data"]["changes"]
    )
