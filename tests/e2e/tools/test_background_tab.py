"""A background tab (browser/background_tabs.py): the owner's cookies, seen by no one.

What monitors will run their checks in: no tab list shows it, it never becomes the active
tab, its refs are its own, its events and popups reach no controller, and it is closed when
its block ends.  The controller's commands go on meanwhile, and a page the controller opens
then is the controller's tab as before.
"""


async def test_a_background_tab_is_seen_by_no_one(call, session, site_url):
    await call(f"open {site_url}/popup.html")
    mine = (await call("snapshot -i"))["data"]["snapshot"]
    listed = (await call("tab_list"))["data"]["tabs"]
    events: list[dict] = []
    session.events.listen(events.append)
    await call("eval document.cookie = 'who=owner'")

    async with session.open_background_tab() as tab:
        assert tab.background and tab not in session.tabs.values()
        await tab.page.goto(f"{site_url}/buttons.html")
        assert await tab.page.evaluate("document.cookie") == "who=owner", "the owner's cookies"
        theirs = await tab.page.aria_snapshot(mode="ai")
        assert "Count" in theirs and "Count" not in mine and "Open window" in mine
        count = await tab.locate(selector="#count")
        await count.click()
        assert await count.text_content() == "Clicked 1"

        # A popup of the background tab is closed, never listed.
        await tab.page.goto(f"{site_url}/popup.html")
        async with tab.page.expect_popup() as opened:
            await (await tab.locate(selector="#open")).click()
        popup = await opened.value
        if not popup.is_closed():
            await popup.wait_for_event("close")

        # The controller sees its own tab, refs and title as before, and acts on them.
        assert (await call("tab_list"))["data"]["tabs"] == listed
        assert (await call("snapshot -i"))["data"]["snapshot"] == mine
        assert (await call("get title"))["data"]["title"] == "Popup"

        # A tab the controller's page opens meanwhile is the controller's, made active.
        assert (await call("click #open"))["data"]["new_tabs"] == [session.active_tab]
        now = (await call("tab_list"))["data"]["tabs"]
        assert [t["tab"] for t in now] == [t["tab"] for t in listed] + [session.active_tab]
        await call(f"tab_close {session.active_tab}")

    assert tab.page.is_closed()
    assert (await call("tab_list"))["data"]["tabs"] == listed
    assert not [e for e in events if e["data"].get("tab") == tab.id], "its events reach no one"
    changed = [e["data"]["tab"] for e in events if e["event"] == "tab_changed"]
    assert tab.id not in changed and changed, "the controller's own tab changes are told"
