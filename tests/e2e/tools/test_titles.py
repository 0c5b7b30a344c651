"""A tab's title, reported by its page over the tab's own CDP binding (browser/titles.py)."""

from tests.e2e.tools.test_session import count_title_reads


async def test_a_load_costs_the_page_no_playwright_binding(session, call, site_url):
    """The report is a CDP binding's one-way event: Playwright's bindings controller (12 KB
    evaluated in every document of every frame) is not in the page, and the title still
    comes with the load."""
    assert (await call(f"open {site_url}/index.html"))["data"]["title"] == "Test site"
    present = "typeof window.__playwright__binding__controller__"
    assert await session.page.evaluate(present) == "undefined"


async def test_a_popups_first_document_reports_its_title(session, call, site_url):
    """A popup's first document began before its tab had a binding: the tab observes it once
    the binding is there, so its title is kept, not asked of the page by every command."""
    await call(f"open {site_url}/popup.html")
    await call("click #blank")
    popup = session.tab
    assert popup is not None and popup.id == "t2"
    await popup.page.wait_for_load_state("load")
    await popup.observed()
    asked = count_title_reads(popup.page)
    for _ in range(3):
        assert (await call("get url"))["data"]["title"] == "Form"
    assert asked == []


async def test_a_page_that_misuses_the_binding_changes_nothing(session, call, site_url):
    """What a page's own script sends on the binding that is no report is ignored: the next
    command works and the title is the page's."""
    await call(f"open {site_url}/index.html")
    for junk in ["'junk'", "'[5, true]'", "'[\"a\", true, 3]'", "'null'"]:
        assert (await call(f"eval window.__browserdTitle({junk})"))["success"]
    assert (await call("eval document.title = 'Still mine'"))["success"]
    assert (await call("get url"))["data"]["title"] == "Still mine"
