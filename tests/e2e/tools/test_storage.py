"""Cookies and the page's two web storages, and a clipboard no other session can read."""

import pytest

from tests.fixtures.browser import command


@pytest.fixture
async def page(call, site_url):
    opened = await call(f"open {site_url}/catalog.html")
    assert opened["success"], opened
    return call


async def test_cookies_set_get_and_clear(page, site_url):
    assert (await page("cookies_set a 1"))["success"]
    other = {"name": "b", "value": "2", "url": site_url, "http_only": True}
    assert (await page({"tool": "cookies_set", "params": other}))["success"]
    everything = (await page("cookies_get"))["data"]
    assert sorted(c["name"] for c in everything["cookies"]) == ["a", "b"]
    assert (await page("eval document.cookie"))["data"]["result"] == "a=1"  # b is httpOnly
    only_b = (await page("cookies_get b"))["data"]["cookies"]
    assert len(only_b) == 1 and only_b[0]["httpOnly"] is True
    assert (await page("cookies_get --url https://elsewhere.example/"))["data"]["count"] == 0

    assert (await page("cookies_clear a"))["data"]["deleted"] == 1
    assert (await page("cookies_clear"))["data"]["deleted"] == 1
    both = {"name": "c", "value": "3", "url": site_url, "domain": "127.0.0.1"}
    assert (await page({"tool": "cookies_set", "params": both}))["error"]["code"] == (
        "INVALID_PARAMS"
    )


@pytest.mark.parametrize("kind", ["local", "session"])
async def test_web_storage(page, kind):
    area = f"{kind}Storage"
    assert (await page(f"storage_{kind}_set greeting hello world"))["data"]["ok"]
    assert (await page(f"eval {area}.getItem('greeting')"))["data"]["result"] == "hello world"
    assert (await page(f"storage_{kind}_get"))["data"]["items"] == {"greeting": "hello world"}
    assert (await page(f"storage_{kind}_get_key greeting"))["data"]["value"] == "hello world"
    assert (await page(f"storage_{kind}_get_key nothing"))["data"]["value"] is None
    assert (await page(f"storage_{kind}_clear"))["data"]["deleted"] == 1
    assert (await page(f"storage_{kind}_get"))["data"]["items"] == {}
    await page("open about:blank")
    assert (await page(f"storage_{kind}_get"))["error"]["code"] == "REFUSED"


async def test_clipboard_is_per_session(page, browser_pool, dispatcher, site_url):
    assert (await page("clipboard_read"))["data"]["text"] == ""
    await page("clipboard_write pasted words")
    await page("focus #log")
    pasted = await page("clipboard_paste")
    assert pasted["data"]["verified"], pasted
    assert (await page("get_value #log"))["data"]["value"] == "pasted words"

    await page("fill #city Copenhagen")
    await page("focus #city")
    await page("press ControlOrMeta+a")
    copied = await page("clipboard_copy")
    assert copied["data"]["text"] == "Copenhagen", copied
    assert (await page("clipboard_read"))["data"]["text"] == "Copenhagen"

    other = await browser_pool.session("catalog-clipboard-stranger")
    try:
        await command(dispatcher, other, f"open {site_url}/catalog.html")
        theirs = await command(dispatcher, other, "clipboard_read")
        assert theirs["data"]["text"] == ""
        # even with permission, the browser's shared clipboard holds nothing of ours
        await other.page.context.grant_permissions(["clipboard-read"], origin=site_url)
        leaked = await command(dispatcher, other, "eval navigator.clipboard.readText()")
        assert leaked["data"]["result"] == "", leaked
    finally:
        await other.close()
    assert (await page("clipboard_read"))["data"]["text"] == "Copenhagen"


POLL = """() => {
  const clip = (window.clip = { seen: [], refused: 0 });
  const poll = () => navigator.clipboard.readText()
    .then((text) => clip.seen.push(text), () => clip.refused++)
    .finally(() => setTimeout(poll, 0));
  poll();
}"""


async def test_no_page_reads_the_browsers_clipboard(page, browser_pool, dispatcher, site_url):
    """Mallory's page polls the browser's clipboard after her own clipboard_copy: it is
    refused every time, and sees nothing of what Alice writes and pastes."""
    mallory = await browser_pool.session("catalog-clipboard-mallory")
    try:
        await command(dispatcher, mallory, f"open {site_url}/catalog.html")
        await command(dispatcher, mallory, "fill #city Mallory")
        await command(dispatcher, mallory, "focus #city")
        await command(dispatcher, mallory, "press ControlOrMeta+a")
        assert (await command(dispatcher, mallory, "clipboard_copy"))["data"]["text"] == "Mallory"
        await mallory.page.evaluate(POLL)
        polls = "() => clip.seen.length + clip.refused"
        before = await mallory.page.evaluate(polls)

        await page("clipboard_write DE89 3704 0044 0532 0130 00")
        await page("focus #log")
        assert (await page("clipboard_paste"))["data"]["verified"]
        assert (await page("get_value #log"))["data"]["value"] == "DE89 3704 0044 0532 0130 00"
        await mallory.page.wait_for_function(f"() => ({polls})() > {before} + 1")
        seen = await mallory.page.evaluate("clip.seen")
    finally:
        await mallory.close()
    assert seen == []  # not one read was let through, of anything


EDITOR = """() => {
  const log = document.querySelector('#log');
  log.addEventListener('copy', (e) => {
    e.clipboardData.setData('text/plain', 'from the handler');
    e.preventDefault();
  }, { once: true });
  log.addEventListener('paste', (e) => {
    window.pasted = e.clipboardData.getData('text/plain');
    e.preventDefault();
  }, { once: true });
}"""


async def test_a_pages_copy_and_paste_handlers_see_the_text(page):
    """An editor that handles copy and paste itself gets them as in a person's browser."""
    await page({"tool": "eval", "params": {"script": f"({EDITOR})()"}})
    await page("focus #log")
    assert (await page("clipboard_copy"))["data"]["text"] == "from the handler"
    await page("clipboard_write for the editor")
    await page("clipboard_paste")
    assert (await page("eval window.pasted"))["data"]["result"] == "for the editor"
    assert (await page("get_value #log"))["data"]["value"] == ""  # the handler took it
