"""The rest of the core catalog, each tool once against the local site."""

import base64

import pytest


async def ok(call, command):
    response = await call(command)
    assert response["success"], response
    return response["data"]


async def test_history_tools(call, site_url):
    await ok(call, f"open {site_url}/index.html")
    await ok(call, f"open {site_url}/form.html")
    back = await ok(call, "back")
    assert back["moved"] is True and back["title"] == "Test site"
    assert (await ok(call, "forward"))["title"] == "Form"
    stuck = await ok(call, "forward")
    assert stuck["moved"] is False and "no page" in stuck["note"]
    await ok(call, "fill #name Ada")
    assert (await ok(call, "reload"))["status"] == 200
    assert (await ok(call, "eval document.querySelector('#name').value"))["result"] == ""


async def test_read_tools(call, site_url):
    await ok(call, f"open {site_url}/index.html")
    assert (await ok(call, "get url"))["url"] == f"{site_url}/index.html"
    assert (await ok(call, "get title"))["title"] == "Test site"
    assert (await ok(call, "get text h1"))["text"] == "Test site"
    assert (await ok(call, "get html \"a[href='form.html']\" --outer"))[
        "html"
    ] == '<a href="form.html">Form</a>'
    assert (await ok(call, "get html nav")).get("html").count("<a ") == 10
    assert (await ok(call, "get attr \"a[href='form.html']\" href"))["value"] == "form.html"
    assert (await ok(call, "get attr h1 data-missing"))["value"] is None
    assert (await ok(call, "get text")).get("text").startswith("Test site")


async def test_press_enter_submits_the_form(call, site_url):
    await ok(call, f"open {site_url}/form.html")
    await ok(call, "fill #name Grace")
    pressed = await ok(call, "press Enter #name")
    assert pressed["verified"] is True
    assert (await ok(call, "get text #out"))["text"] == "sent Grace"
    assert (await call("press NotAKey"))["error"]["code"] == "INVALID_PARAMS"


async def test_hover_focus_scroll(call, site_url):
    await ok(call, f"open {site_url}/buttons.html")
    hovered = await ok(call, "hover #menu")
    assert hovered["verified"] is True
    assert (await ok(call, "get text #tip"))["text"] == "Tooltip"
    assert (await ok(call, "focus #count"))["focused"] is True
    await ok(call, f"open {site_url}/big.html")
    assert (await ok(call, "scroll down 500"))["position"]["y"] == 500
    assert (await ok(call, "scroll up 200"))["position"]["y"] == 300
    into_view = await ok(call, {"tool": "scroll", "params": {"selector": "a[href='#item4000']"}})
    assert into_view["position"]["y"] > 10_000


async def test_type_and_contenteditable(call, site_url):
    await ok(call, f"open {site_url}/form.html")
    assert (await ok(call, "type #bio hello"))["ok"] is True
    assert (await ok(call, "type #bio ' world'"))["ok"] is True
    assert (await ok(call, "eval document.querySelector('#bio').value"))["result"] == "hello world"
    assert (await ok(call, "fill #notes 'Some notes'"))["ok"] is True
    assert (await ok(call, "fill #date 2026-11-30"))["ok"] is True


async def test_wait_tools(call, site_url):
    await ok(call, f"open {site_url}/slow.html")
    assert (await ok(call, "wait #late"))["state"] == "visible"
    assert (await ok(call, "get text #late"))["text"] == "Arrived"
    assert (await ok(call, "wait 10"))["waited_ms"] == 10
    assert (await call("wait 600000"))["error"]["code"] == "INVALID_PARAMS"
    await ok(call, f"open {site_url}/buttons.html")
    assert (await call("wait .dup"))["error"]["code"] == "AMBIGUOUS"


async def test_eval(call, site_url):
    await ok(call, f"open {site_url}/index.html")
    assert (await ok(call, "eval 1 + 2"))["result"] == 3
    assert (await ok(call, "eval () => ({a: [1, 'b']})"))["result"] == {"a": [1, "b"]}
    failed = await call("eval throw new Error('boom')")
    assert failed["error"]["code"] == "INVALID_PARAMS" and "boom" in failed["error"]["message"]


async def test_eval_that_opens_a_dialog_returns(call, site_url):
    await ok(call, f"open {site_url}/index.html")
    data = await ok(call, "eval confirm('go?')")
    assert data["dialog"]["message"] == "go?"
    await ok(call, "dialog accept")


async def test_a_dialog_in_each_of_two_tabs_is_answered_newest_first(call, site_url):
    """Each tab holds its own dialog: answering one leaves the other's waiting, and says so."""
    await ok(call, f"open {site_url}/index.html")
    assert (await ok(call, "eval confirm('first?')"))["dialog"]["tab"] == "t1"
    await ok(call, "tab_new")  # t1's dialog goes on waiting
    assert (await ok(call, "eval confirm('second?')"))["dialog"]["tab"] == "t2"
    answered = await ok(call, "dialog accept")
    assert answered["message"] == "second?" and answered["dialog"]["message"] == "first?"
    assert (await ok(call, "dialog dismiss"))["dialog"] is None


@pytest.mark.parametrize(
    ("command", "mime", "magic"),
    [
        ("screenshot", "image/png", b"\x89PNG"),
        ("screenshot --format jpeg --quality 40", "image/jpeg", b"\xff\xd8\xff"),
        ("screenshot -f", "image/png", b"\x89PNG"),
        ("screenshot h1 --scale device", "image/png", b"\x89PNG"),
    ],
)
async def test_screenshots(call, site_url, command, mime, magic):
    await ok(call, f"open {site_url}/form.html")
    data = await ok(call, command)
    raw = base64.b64decode(data["base64"])
    assert data["mime"] == mime and raw.startswith(magic) and data["bytes"] == len(raw)


async def test_screenshot_sizes_differ_by_scope(call, site_url):
    await ok(call, f"open {site_url}/big.html")
    element = await ok(call, "screenshot h1")
    page = await ok(call, "screenshot")
    assert element["bytes"] < page["bytes"]
    assert (await call("screenshot --quality 5"))["error"]["code"] == "INVALID_PARAMS"


async def test_screenshot_over_the_cap_is_too_large(call, session, site_url, monkeypatch):
    await ok(call, f"open {site_url}/form.html")
    assert (await ok(call, "screenshot"))["bytes"] > 10_000
    monkeypatch.setattr(session.config, "binary_cap", 10_000)
    response = await call("screenshot")
    assert response["error"]["code"] == "TOO_LARGE"
    assert "jpeg" in response["error"]["message"]


async def test_wait_for_a_ref(call, site_url):
    await ok(call, f"open {site_url}/buttons.html")
    snap = (await ok(call, "snapshot -i"))["snapshot"]
    ref = snap.split('button "Accept cookies" @')[1].split("\n")[0]
    assert (await ok(call, f"wait for @{ref}"))["state"] == "visible"
    await ok(call, "click #accept")
    assert (await ok(call, f"wait for @{ref} detached"))["state"] == "detached"
    assert (await call(f"wait for @{ref}"))["error"]["code"] == "STALE_REF"
