"""PDF, annotated screenshots, the three diffs, windows and watch, through the protocol."""

import base64
import re


async def test_pdf(devtools):
    call = devtools
    printed = (await call("pdf"))["data"]
    data = base64.b64decode(printed["base64"])
    assert data.startswith(b"%PDF-") and printed["bytes"] == len(data)
    assert printed["mime"] == "application/pdf"
    wide = await call({"tool": "pdf", "params": {"format": "Letter", "landscape": True}})
    assert wide["data"]["base64"] != printed["base64"]
    assert (await call("pdf --scale 5"))["error"]["code"] == "INVALID_PARAMS"
    assert (await call("pdf B7"))["error"]["code"] == "INVALID_PARAMS"


async def test_annotated_screenshot_labels_the_snapshots_refs(devtools):
    call = devtools
    snap = (await call("snapshot -i"))["data"]["snapshot"]
    refs = re.findall(r"@(\w+)", snap)
    shot = (await call("screenshot_annotated"))["data"]
    assert base64.b64decode(shot["base64"]).startswith(b"\x89PNG")
    legend = shot["legend"]
    assert [entry["ref"] for entry in legend] == [f"@{r}" for r in refs]
    assert [entry["n"] for entry in legend] == list(range(1, len(refs) + 1))
    assert {"n": 1, "ref": f"@{refs[0]}", "role": "button", "name": "Log"} == legend[0]
    # each labelled ref still acts, and the overlay is gone from the page
    assert (await call(f"click {legend[3]['ref']}"))["data"]["verified"]
    assert (await call("get_count #__nbd_annotations"))["data"]["count"] == 0
    plain = (await call("screenshot"))["data"]["base64"]
    assert plain != shot["base64"]


async def test_annotated_screenshot_without_a_snapshot_takes_one(call, site_url):
    await call(f"open {site_url}/form.html")
    shot = (await call("screenshot_annotated"))["data"]
    assert shot["legend"] and all(e["ref"].startswith("@e") for e in shot["legend"])
    assert (await call(f"focus {shot['legend'][0]['ref']}"))["success"]


async def test_diff_snapshot_shows_what_came(devtools):
    call = devtools
    first = (await call("diff_snapshot"))["data"]
    assert (
        first["changed"] is False and "baseline" in first["note"] and "Item 1" in first["snapshot"]
    )
    same = (await call("diff_snapshot"))["data"]
    assert (same["changed"], same["added"], same["removed"], same["diff"]) == (False, 0, 0, "")
    await call("click #grow")
    grown = (await call("diff_snapshot"))["data"]
    assert grown["changed"] and grown["added"] == 1 and grown["removed"] == 0
    assert "+" in grown["diff"] and "Item 2" in grown["diff"]
    # the options of the previous snapshot are reused; other options are noted
    await call("snapshot -i")
    await call("click #grow")
    assert (await call("diff_snapshot"))["data"]["changed"] is False  # -i: no new actionables
    other = (await call("diff_snapshot --no-interactive"))["data"]
    assert "other options" in other["note"]


async def test_screenshot_if_changed_sends_no_picture_when_nothing_changed(devtools):
    call = devtools
    first = (await call("screenshot --if-changed"))["data"]
    assert first["unchanged"] is False and base64.b64decode(first["base64"]).startswith(b"\x89PNG")
    same = (await call("screenshot --if-changed"))["data"]
    assert same["unchanged"] is True and "base64" not in same and same["bytes"] == first["bytes"]
    await call("click #grow")
    grown = (await call("screenshot --if-changed"))["data"]
    assert grown["unchanged"] is False and grown["base64"] != first["base64"]


async def test_diff_screenshot_counts_changed_pixels(devtools):
    call = devtools
    assert (await call("diff_screenshot"))["error"]["code"] == "INVALID_PARAMS"
    await call("screenshot")
    still = (await call("diff_screenshot"))["data"]
    assert still["changed_ratio"] == 0 and still["resized"] is False
    await call("click #grow")
    grown = (await call("diff_screenshot"))["data"]
    assert 0 < grown["changed_ratio"] < 0.1 and grown["changed_pixels"] > 0
    assert base64.b64decode(grown["base64"]).startswith(b"\x89PNG")
    assert grown["size"] == [1280, 720]

    small = (await call("screenshot #pic"))["data"]["base64"]
    against = await call({"tool": "diff_screenshot", "params": {"baseline": small}})
    assert against["data"]["resized"] and against["data"]["changed_ratio"] > 0.9
    bad = await call({"tool": "diff_screenshot", "params": {"baseline": "bm90IGFuIGltYWdl"}})
    assert bad["error"]["code"] == "INVALID_PARAMS"
    assert (await call("diff_screenshot ***"))["error"]["code"] == "INVALID_PARAMS"


async def test_diff_url_uses_a_scratch_tab(devtools, site_url):
    call = devtools
    compared = (await call(f"diff_url {site_url}/dialogs.html"))["data"]
    assert compared["left"] == f"{site_url}/devtools.html" and compared["changed"]
    assert '+  - button "Confirm"' in compared["diff"] or '+- button "Confirm"' in compared["diff"]
    assert (await call("tab_list"))["data"]["tabs"] == [
        {"tab": "t1", "url": f"{site_url}/devtools.html", "title": "Devtools", "active": True}
    ]
    same = (await call(f"diff_url {site_url}/form.html {site_url}/form.html"))["data"]
    assert same["changed"] is False
    assert (await call("diff_url file:///etc/passwd"))["error"]["code"] == "REFUSED"
    assert len((await call("tab_list"))["data"]["tabs"]) == 1


async def test_windows_have_their_own_cookies(call, site_url):
    await call(f"open {site_url}/index.html")
    await call("cookies_set flavour vanilla")
    opened = (await call(f"window_new {site_url}/index.html"))["data"]
    assert opened["window"] == "w2" and opened["opened"] == "t2" and opened["tab"] == "t2"
    assert (await call("cookies_get"))["data"]["cookies"] == []
    assert (await call("tab_new"))["data"]["opened"] == "t3"
    windows = (await call("window_list"))["data"]["windows"]
    assert [(w["window"], [t["tab"] for t in w["tabs"]]) for w in windows] == [
        ("w1", ["t1"]),
        ("w2", ["t2", "t3"]),
    ]
    await call("tab_switch t1")
    assert [c["name"] for c in (await call("cookies_get"))["data"]["cookies"]] == ["flavour"]
    assert (await call("window_close w1"))["error"]["code"] == "REFUSED"
    assert (await call("window_close w9"))["error"]["code"] == "INVALID_PARAMS"
    closed = (await call("window_close w2"))["data"]
    assert closed["tabs_closed"] == ["t2", "t3"] and closed["tab"] == "t1"
    assert [w["window"] for w in (await call("window_list"))["data"]["windows"]] == ["w1"]


async def test_watch_marks_events_for_the_daemon(call, session, browser_pool, site_url):
    heard = []
    browser_pool.on_event(heard.append)
    try:
        assert (await call("watch load dialog"))["data"]["watching"] == ["dialog", "load"]
        await call(f"open {site_url}/index.html")
        await call("tab_new")
        assert (await call("watch off dialog"))["data"]["watching"] == ["load"]
        assert (await call("watch off"))["data"]["watching"] == []
        await call(f"open {site_url}/index.html")
        assert (await call("watch nonsense"))["error"]["code"] == "INVALID_PARAMS"
        assert (await call("watch off nonsense"))["error"]["code"] == "INVALID_PARAMS"
        json_on = await call({"tool": "watch", "params": {"events": ["crash", "download"]}})
        assert json_on["data"]["watching"] == ["crash", "download"]
        json_off = await call({"tool": "watch", "params": {"off": True}})
        assert json_off["data"]["watching"] == []
    finally:
        browser_pool.listeners.remove(heard.append)
    mine = [e for e in heard if e["owner"] == session.owner]
    marked = [(e["event"], e["data"]["tab"]) for e in mine if e.get("watched")]
    assert marked == [("load", "t1")]
    assert ("tab_changed", "t2") in [(e["event"], e["data"]["tab"]) for e in mine]
