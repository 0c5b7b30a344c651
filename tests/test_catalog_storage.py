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
