"""An action that opens a page answers once that page has loaded, and the next command
acts on it with no wait in between; an action that opens nothing waits for nothing.

saved.html's image comes a moment late and the page builds a button and sets its title in
its load handler, as the Django admin builds its widgets: a reply that came at the commit
would name the title "Loading…", and the next command would find no button.
"""

import asyncio
import socket


async def leave(call, navigation_url: str, query: str = "") -> None:
    opened = await call(f"open {navigation_url}/navigate.html{query}")
    assert opened["success"], opened


async def test_a_submit_answers_with_the_loaded_page(call, navigation_url):
    await leave(call, navigation_url)
    clicked = await call("click #submit")
    data = clicked["data"]
    assert data["url"] == f"{navigation_url}/saved.html" and data["title"] == "Saved", data
    built = await call("get text #built")
    assert built["data"]["text"] == "Built at load", built
    assert 'button "Built at load"' in (await call("snapshot -i"))["data"]["snapshot"]
    assert data["changes"] == ["new page loaded"] and data["verified"] is True, clicked
    assert data["status"] == 200, "the 303's target, the page the form led to"


async def test_enter_in_a_field_and_a_link_answer_with_the_loaded_page(call, navigation_url):
    for action in ("press Enter #name", "dblclick #slow"):
        await leave(call, navigation_url)
        data = (await call(action))["data"]
        assert data["title"] == "Saved", (action, data)
        assert (await call("get text #built"))["data"]["text"] == "Built at load", action
        assert data["changes"] == ["new page loaded"], (action, data)


async def test_a_link_to_a_new_tab_answers_with_that_tab_loaded(call, navigation_url):
    await leave(call, navigation_url)
    data = (await call("click #popup"))["data"]
    assert "new tab opened" in data["changes"] and data["new_tabs"] == ["t2"], data
    assert data["tab"] == "t2" and data["title"] == "Saved", "the tab line names the new tab"
    assert (await call("get text #built"))["data"]["text"] == "Built at load"


async def test_a_click_that_opens_nothing_waits_for_nothing(
    call, navigation_url, session, monkeypatch
):
    """With the action's timeout raised to two minutes, a click that starts no navigation
    still answers inside a bound far below it: it waits for no page to come."""
    await leave(call, navigation_url)
    monkeypatch.setattr(session.config, "timeout_ms", 120_000)
    async with asyncio.timeout(20):  # a bound, not a measurement: a wait would take 120 s
        data = (await call("click #noop"))["data"]
    assert data["verified"] is False and data["note"].startswith("NOT VERIFIED"), data
    assert data["changes"] == [] and data["title"] == "Navigate", data


async def test_a_navigation_that_fails_is_said_and_the_daemon_goes_on(call, navigation_url):
    with socket.socket() as closed:  # a port that was just free: nothing listens there now
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    await leave(call, navigation_url, f"?dead={port}")
    data = (await call("click #dead"))["data"]
    assert data["changes"] == ["navigation failed"] and data["verified"] is True, data
    assert data["note"] == (
        f"NAVIGATION FAILED: could not load http://127.0.0.1:{port}/: net::ERR_CONNECTION_REFUSED."
    )
    await leave(call, navigation_url)
    assert (await call("click #submit"))["data"]["title"] == "Saved"
