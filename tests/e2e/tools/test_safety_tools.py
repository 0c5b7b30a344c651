"""Every refusal of the safety contract, end to end through the protocol."""

import asyncio
import re

import pytest


def ref_of(snapshot: str, pattern: str) -> str:
    """The ref on the first snapshot line matching ``pattern``."""
    for line in snapshot.splitlines():
        if re.search(pattern, line):
            return "@" + re.search(r"@(\w+)", line).group(1)
    raise AssertionError(f"{pattern!r} not in snapshot:\n{snapshot}")


async def snap(call, *flags):
    response = await call(" ".join(["snapshot", *flags]))
    assert response["success"], response
    return response["data"]["snapshot"]


def error_code(response):
    assert response["success"] is False, response
    return response["error"]["code"]


# --- refs and selectors -------------------------------------------------------------


async def test_unknown_ref_is_stale(call, site_url):
    await call(f"open {site_url}/buttons.html")
    response = await call("click @e999")
    assert error_code(response) == "STALE_REF"
    assert "take a new snapshot" in response["error"]["message"]


async def test_ref_from_before_a_navigation_is_stale(call, site_url):
    await call(f"open {site_url}/form.html")
    name = ref_of(await snap(call, "-i"), 'textbox "Name"')
    await call(f"open {site_url}/form.html")
    assert error_code(await call(f"fill {name} x")) == "STALE_REF"


async def test_a_stale_ref_does_not_wait_for_the_browsers_timeout(call, session, site_url):
    """With Playwright's default timeout raised to two minutes, a stale or unknown ref still
    fails with STALE_REF inside a bound far below it: it never waits for the element."""
    session.context.set_default_timeout(120_000)
    await call(f"open {site_url}/form.html")
    name = ref_of(await snap(call, "-i"), 'textbox "Name"')
    await call(f"open {site_url}/buttons.html")
    async with asyncio.timeout(20):  # a bound, not a measurement: a wait would take 120 s
        for command in (f"fill {name} x", f"click {name}", "click @e999", f"get text {name}"):
            assert error_code(await call(command)) == "STALE_REF", command


async def test_malformed_ref_is_invalid(call, site_url):
    await call(f"open {site_url}/buttons.html")
    response = await call({"tool": "click", "params": {"ref": "button"}})
    assert error_code(response) == "INVALID_PARAMS"


async def test_selector_matching_nothing(call, site_url):
    await call(f"open {site_url}/buttons.html")
    assert error_code(await call("click #nope")) == "ELEMENT_NOT_FOUND"


async def test_selector_matching_two_is_ambiguous(call, site_url):
    await call(f"open {site_url}/buttons.html")
    response = await call("click .dup")
    assert error_code(response) == "AMBIGUOUS"
    assert "2 elements" in response["error"]["message"]


async def test_selector_that_does_not_parse(call, site_url):
    await call(f"open {site_url}/buttons.html")
    assert error_code(await call('click "button[[["')) == "INVALID_PARAMS"


async def test_selectors_cross_open_shadow_roots(call, site_url):
    await call(f"open {site_url}/shadow.html")
    assert (await call("fill #inner hello"))["data"]["ok"] is True
    clicked = await call("click #inner-btn")
    assert clicked["data"]["verified"] is True
    assert (await call("get text #inner-btn"))["data"]["text"] == "Shadow clicked"


# --- click ----------------------------------------------------------------------------


async def test_click_that_changes_nothing_is_not_verified(call, site_url):
    await call(f"open {site_url}/buttons.html")
    response = await call("click #noop")
    assert response["data"]["verified"] is False
    assert response["data"]["note"].startswith("NOT VERIFIED")


async def test_click_that_changes_the_page_is_verified(call, site_url):
    await call(f"open {site_url}/buttons.html")
    response = await call("click #count")
    assert response["data"] | {"verified": True} == response["data"]
    assert "page content changed" in response["data"]["changes"]


async def test_covered_element_is_not_clicked(call, site_url):
    await call(f"open {site_url}/buttons.html")
    response = await call("click #covered")
    assert error_code(response) == "REFUSED"
    assert "div#banner" in response["error"]["message"]
    assert (await call("get title"))["data"]["title"] == "Buttons"  # not clicked through
    await call("click #accept")
    assert (await call("click #covered"))["data"]["title"] == "covered clicked"


async def test_clickable_div_gets_a_ref(call, site_url):
    await call(f"open {site_url}/buttons.html")
    div = ref_of(await snap(call, "-i"), "Clickable div")
    assert (await call(f"click {div}"))["data"]["verified"] is True
    assert (await call("get text #said"))["data"]["text"] == "div clicked"


# --- fill -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("selector", "words"),
    [("#disabled", "disabled"), ("#readonly", "read-only"), ("#agree", "Not a text field")],
)
async def test_fill_refuses_fields_a_person_could_not_edit(call, site_url, selector, words):
    await call(f"open {site_url}/form.html")
    before = await call(
        {"tool": "eval", "params": {"script": f"document.querySelector('{selector}').value"}}
    )
    response = await call(f"fill {selector} changed")
    assert error_code(response) == "REFUSED"
    assert words in response["error"]["message"]
    after = await call(
        {"tool": "eval", "params": {"script": f"document.querySelector('{selector}').value"}}
    )
    assert after["data"]["result"] == before["data"]["result"]


async def test_fill_refuses_text_over_maxlength(call, site_url):
    await call(f"open {site_url}/form.html")
    response = await call("fill #code 12345")
    assert error_code(response) == "REFUSED"
    assert "at most 4" in response["error"]["message"]
    assert (await call("fill #code 1234"))["data"]["ok"] is True


async def test_fill_reports_mismatch_when_page_rewrites(call, site_url):
    await call(f"open {site_url}/rewrite.html")
    response = await call("fill #shout hello")
    assert response["data"]["ok"] is False
    assert response["data"]["note"] == "MISMATCH: the field now reads 'HELLO'."
    assert (await call("fill #plain hello"))["data"]["ok"] is True


async def test_type_checks_like_fill_and_appends(call, site_url):
    await call(f"open {site_url}/form.html")
    assert error_code(await call("type #readonly more")) == "REFUSED"
    await call("fill #code 12")
    assert error_code(await call("type #code 345")) == "REFUSED"
    assert (await call("type #code 34"))["data"]["ok"] is True
    read = await call(
        {"tool": "eval", "params": {"script": "document.querySelector('#code').value"}}
    )
    assert read["data"]["result"] == "1234"


async def test_password_needs_secret_and_never_comes_back(call, site_url):
    await call(f"open {site_url}/form.html")
    refused = await call("fill #password opensesame")
    assert error_code(refused) == "REFUSED"
    assert "secret" in refused["error"]["message"]
    filled = await call("fill #password opensesame --secret")
    assert filled["data"] == filled["data"] | {"ok": True}
    texts = [
        await call("snapshot"),
        await call("snapshot -i"),
        await call("get html"),
        await call("get html #signup --outer"),
        await call("get attr #password value"),
        filled,
    ]
    for response in texts:
        assert "opensesame" not in str(response) and "hunter2" not in str(response)
    assert "••••" in texts[0]["data"]["snapshot"]
    assert error_code(texts[4]) == "REFUSED"


async def test_password_mismatch_does_not_echo_the_value(call, site_url):
    await call(f"open {site_url}/rewrite.html")
    response = await call("fill #pin opensesame --secret")
    assert response["data"]["ok"] is False
    assert response["data"]["note"] == "MISMATCH: the page changed the password field's value."
    assert "op" not in str(response["data"].get("value"))


# --- navigation -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    ["file:///etc/passwd", "javascript:alert(1)", "data:text/html,<b>x</b>", "chrome://version"],
)
async def test_navigation_refuses_other_schemes(call, url):
    response = await call({"tool": "open", "params": {"url": url}})
    assert error_code(response) == "REFUSED"
    assert (await call("get url"))["data"]["url"] == "about:blank"


async def test_about_blank_and_http_are_allowed(call, site_url):
    assert (await call(f"open {site_url}/index.html"))["success"]
    assert (await call("open about:blank"))["data"]["url"] == "about:blank"


async def test_a_scheme_the_config_allows_loads(call, session, monkeypatch):
    """ "Unless config allows them": the refusal follows the configured list, not a fixed one."""
    page = "data:text/html,<title>Allowed</title><p id=x>data page</p>"
    assert error_code(await call({"tool": "open", "params": {"url": page}})) == "REFUSED"
    allowed = [*session.config.allowed_schemes, "data"]
    monkeypatch.setattr(session.config, "allowed_schemes", allowed)
    opened = await call({"tool": "open", "params": {"url": page}})
    assert opened["success"], opened
    assert (await call("get text #x"))["data"]["text"] == "data page"
    for still_refused in ("file:///etc/passwd", "javascript:alert(1)", "ftp://x.org/"):
        response = await call({"tool": "open", "params": {"url": still_refused}})
        assert error_code(response) == "REFUSED", still_refused
        assert "data" in response["error"]["message"]  # it names what is allowed


async def test_tab_new_refuses_what_open_refuses(call, site_url):
    assert (await call(f"open {site_url}/index.html"))["success"]
    tabs = await call("tab_list")
    response = await call({"tool": "tab_new", "params": {"url": "file:///etc/passwd"}})
    assert error_code(response) == "REFUSED"
    assert await call("tab_list") == tabs, "no blank tab left behind, the same one active"


async def test_unreachable_address_is_navigation_failed(call, site_url):
    port = site_url.rsplit(":", 1)[1]
    response = await call(f"open http://127.0.0.1:1/{port}")
    assert error_code(response) == "NAVIGATION_FAILED"


# --- caps -----------------------------------------------------------------------------


async def test_big_results_are_cut_and_flagged(call, site_url, session):
    await call(f"open {site_url}/big.html")
    text = await call("get text")
    assert text["data"]["truncated"] is True
    assert len(text["data"]["text"]) < session.config.result_cap
    assert "Result cut" in text["data"]["note"]
    snapshot = await call("snapshot")
    assert snapshot["data"]["truncated"] is True
    assert "Narrow it" in snapshot["data"]["snapshot"]
    assert len(snapshot["data"]["snapshot"]) <= session.config.result_cap


async def test_the_cap_is_configurable(call, site_url, session, monkeypatch):
    await call(f"open {site_url}/form.html")
    whole = await call("get html")
    assert whole["data"].get("truncated") is None and len(whole["data"]["html"]) > 1500
    monkeypatch.setattr(session.config, "result_cap", 1000)
    cut = await call("get html")
    assert cut["data"]["truncated"] is True and "1,000 characters" in cut["data"]["note"]
    assert len(cut["data"]["html"]) < 1000
    assert cut["data"]["html"][:200] == whole["data"]["html"][:200]


# --- dialogs --------------------------------------------------------------------------


async def test_confirm_is_reported_until_answered(call, site_url):
    await call(f"open {site_url}/dialogs.html")
    clicked = await call("click #confirm")
    assert clicked["success"], clicked
    assert clicked["data"]["dialog"]["type"] == "confirm"
    assert clicked["data"]["dialog"]["message"] == "Delete it?"
    blocked = await call("get text #out")
    assert error_code(blocked) == "REFUSED" and "dialog" in blocked["error"]["message"]
    assert (await call("tab_list"))["data"]["dialog"]["type"] == "confirm"
    assert (await call("dialog dismiss"))["data"]["answer"] == "dismissed"
    assert (await call("get text #out"))["data"]["text"] == "no"
    assert error_code(await call("dialog accept")) == "NO_DIALOG"


async def test_prompt_takes_an_answer(call, site_url):
    await call(f"open {site_url}/dialogs.html")
    prompted = await call("click #prompt")
    assert prompted["data"]["dialog"]["default"] == "anon"
    await call("dialog accept Ada")
    assert (await call("get text #out"))["data"]["text"] == "name=Ada"


async def test_alert_is_accepted_and_reported(call, site_url):
    await call(f"open {site_url}/dialogs.html")
    response = await call("click #alert")
    assert response["data"]["alert"]["message"] == "Hello"
    assert response["data"]["dialog"] is None
    assert (await call("get text #out"))["data"]["text"] == "alerted"
