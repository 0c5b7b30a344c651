"""Files on disk: uploads only from the uploads directory, downloads; saved login states;
and scrape, which fetches without the browser."""

import base64
import hashlib
import os
import sys
import urllib.parse

import pytest

from nostr_browserd.browser.egress import EgressProxy
from nostr_browserd.browser.netpolicy import NetworkPolicy
from nostr_browserd.tools import fetch as scrape
from tests.fixtures.browser import command


@pytest.fixture
def dirs(browser_pool, tmp_path):
    """Uploads, downloads and states under tmp_path for this test only."""
    config = browser_pool.config
    saved = config.uploads_dir, config.downloads_dir, config.state_dir
    config.uploads_dir, config.downloads_dir, config.state_dir = (
        tmp_path / "up",
        tmp_path / "down",
        tmp_path / "state",
    )
    (tmp_path / "up").mkdir()
    yield tmp_path
    config.uploads_dir, config.downloads_dir, config.state_dir = saved


async def test_upload_sends_only_files_from_the_uploads_directory(call, site_url, dirs, session):
    mine = dirs / "up" / session.owner  # each controller has its own uploads
    mine.mkdir()
    (mine / "a.txt").write_text("alpha")
    (mine / "b.txt").write_text("beta")
    (dirs / "up" / "shared.txt").write_text("not in anyone's own directory")
    (dirs / "up" / "someone-else").mkdir()
    (dirs / "up" / "someone-else" / "theirs.txt").write_text("theirs")
    (dirs / "outside.txt").write_text("private")
    os.symlink(dirs / "outside.txt", mine / "link.txt")
    await call(f"open {site_url}/catalog.html")

    sent = await call("upload #files a.txt b.txt")
    assert sent["data"]["ok"] and [f["size"] for f in sent["data"]["files"]] == [5, 4], sent
    assert (await call("get_value #files"))["data"]["files"] == ["a.txt", "b.txt"]
    for name in (
        "../outside.txt",
        str(dirs / "outside.txt"),
        "link.txt",
        "../shared.txt",
        "../someone-else/theirs.txt",
    ):
        refused = await call({"tool": "upload", "params": {"selector": "#one", "files": [name]}})
        assert refused["error"]["code"] == "FORBIDDEN", (name, refused)
    assert (await call("upload #one a.txt b.txt"))["error"]["code"] == "INVALID_PARAMS"
    assert (await call("upload #one missing.txt"))["error"]["code"] == "INVALID_PARAMS"
    theirs = await call("upload #one someone-else/theirs.txt")  # not in this controller's own
    assert theirs["error"]["code"] == "INVALID_PARAMS", theirs
    assert (await call("upload #city a.txt"))["error"]["code"] == "REFUSED"
    assert (await call("get_value #one"))["data"]["files"] == []


async def test_files_are_off_until_configured(call, site_url):
    await call(f"open {site_url}/catalog.html")
    for line in ("upload #one a.txt", "download #dl"):
        assert (await call(line))["error"]["code"] == "UNAVAILABLE", line
    # saved states need no directory: they live in the state store
    assert (await call("state_save login"))["success"]


async def test_download_by_click_and_by_url(call, site_url, echo_url, dirs, session):
    await call(f"open {site_url}/catalog.html")
    got = await call("download #dl")
    body = b"hello download\n"
    assert got["data"]["name"] == "download.txt", got
    assert got["data"]["size"] == len(body)
    assert got["data"]["sha256"] == hashlib.sha256(body).hexdigest()
    assert base64.b64decode(got["data"]["base64"]) == body
    saved = dirs / "down" / session.owner / "download.txt"
    assert saved.read_bytes() == body

    again = await call("download #dl")
    assert again["data"]["name"] == "download-1.txt"  # never overwrites

    fetched = await call({"tool": "download", "params": {"url": f"{echo_url}/report.csv"}})
    assert fetched["data"]["name"] == "report.csv", fetched
    assert base64.b64decode(fetched["data"]["base64"]) == b"a,b\n1,2\n"
    lean = await call(
        {"tool": "download", "params": {"url": f"{echo_url}/report.csv", "content": False}}
    )
    assert "base64" not in lean["data"] and lean["data"]["size"] == 8
    refused = await call({"tool": "download", "params": {"url": "file:///etc/passwd"}})
    assert refused["error"]["code"] == "REFUSED"
    assert (await call("download #twice --timeout-ms 300"))["error"]["code"] == "TIMEOUT"


async def test_states_are_private_to_their_owner(
    call, site_url, dirs, browser_pool, dispatcher, session
):
    await call(f"open {site_url}/catalog.html")
    await call("cookies_set sid abc123")
    await call("storage_local_set theme dark")
    saved = await call("state_save work")
    assert saved["data"]["cookies"] == 1 and saved["data"]["origins"] == 1, saved
    kept = await dispatcher.store.load_state(session.owner, "work")
    assert [c["value"] for c in kept["cookies"]] == ["abc123"], "in the daemon's state store"
    assert not (dirs / "state").exists(), "no file of it"
    await dispatcher.store.save_state(session.owner, ".session", {"cookies": [], "origins": []})
    assert (await call("state_list"))["data"]["states"] == ["work"], "the daemon's own unlisted"

    await call("cookies_clear")
    await call("storage_local_clear")
    loaded = await call("state_load work")
    assert loaded["success"], loaded
    assert (await call("cookies_get --name sid"))["data"]["cookies"][0]["value"] == "abc123"
    await call("reload")
    assert (await call("storage_local_get_key theme"))["data"]["value"] == "dark"

    for bad in ("../work", "a b", "x" * 65, ".session"):
        refused = await call({"tool": "state_load", "params": {"name": bad}})
        assert refused["error"]["code"] == "INVALID_PARAMS", bad
    assert (await call("state_load nothing"))["error"]["code"] == "INVALID_PARAMS"

    other = await browser_pool.session("catalog-stranger")
    try:
        theirs = await command(dispatcher, other, "state_load work")
        assert theirs["error"]["code"] == "INVALID_PARAMS"
        listed = await command(dispatcher, other, "state_list")
        assert listed["data"]["states"] == []
    finally:
        await other.close()


@pytest.fixture
def scraping(session, https_site, monkeypatch):
    """``session`` trusting the test site's own CA; its network policy as the test sets it."""
    monkeypatch.setattr(session.config, "scrape_ca_file", https_site.ca)
    return session


async def test_scrape_fetches_with_curl_reap_and_runs_no_script(call, scraping, https_site):
    fetched = await call(f"scrape {https_site.url}/page")
    assert fetched["success"], fetched
    data = fetched["data"]
    assert data["url"] == f"{https_site.url}/page" and data["truncated"] is False
    assert "Reaped over TLS" in data["text"] and "script ran" not in data["text"]
    html = await call(
        {"tool": "scrape", "params": {"url": f"{https_site.url}/page", "format": "html"}}
    )
    assert html["data"]["text"].startswith("<!doctype html>")
    missing = await call(f"scrape {https_site.url}/missing")
    assert missing["error"]["code"] == "NAVIGATION_FAILED"
    assert "HTTP 404" in missing["error"]["message"]


async def test_scrape_trusts_only_the_configured_authority(call, session, https_site):
    untrusted = await call(f"scrape {https_site.url}/page")  # the system's CAs: not ours
    assert untrusted["error"]["code"] == "NAVIGATION_FAILED", untrusted


async def test_scrape_caps_what_it_returns(call, scraping, https_site, monkeypatch):
    monkeypatch.setattr(scraping.config, "result_cap", 1000)
    long = await call(
        {"tool": "scrape", "params": {"url": f"{https_site.url}/page", "format": "html"}}
    )
    assert long["data"]["truncated"] is False  # the page is short
    monkeypatch.setattr(scrape, "MAX_BODY", 100)  # a body over the bound is not read
    over = await call(f"scrape {https_site.url}/page")
    assert over["error"]["code"] == "NAVIGATION_FAILED" and "max_body" in over["error"]["message"]


async def test_scrape_refuses_redirects_to_http_and_to_private_addresses(
    call, scraping, https_site, monkeypatch
):
    def bounce(target: str) -> str:
        return f"{https_site.url}/redirect?to={urllib.parse.quote(target, safe='')}"

    followed = await call(f"scrape {bounce('/page')}")  # an https hop on the same site is fine
    assert "Reaped over TLS" in followed["data"]["text"], followed
    downgrade = await call(f"scrape {bounce('http://example.com/')}")
    assert downgrade["error"]["code"] == "REFUSED" and "https only" in downgrade["error"]["message"]
    # With the network policy on (the fixtures turn it off), this loopback site is refused, and
    # so is a redirect from an allowed host to a private one.
    policy = NetworkPolicy(True, [https_site.host])
    monkeypatch.setattr(scraping.pool, "policy", policy)
    assert (await call(f"scrape {https_site.url}/page"))["success"]
    private = await call(f"scrape {bounce('https://10.255.255.1/secret')}")
    assert private["error"]["code"] == "FORBIDDEN", private
    assert "10.255.255.1 is a private address" in private["error"]["message"]
    monkeypatch.setattr(scraping.pool, "policy", NetworkPolicy(True, []))
    own = await call(f"scrape {https_site.url}/page")
    assert own["error"]["code"] == "FORBIDDEN", own


async def test_scrape_through_the_egress_proxy(call, scraping, https_site, monkeypatch):
    """A blocked owner's connections go through the egress proxy, which judges them too."""
    policy = NetworkPolicy(True, [https_site.host])
    proxy = EgressProxy(policy)
    monkeypatch.setattr(scraping.pool, "policy", policy)
    monkeypatch.setattr(scraping.pool, "egress", proxy)
    try:
        assert "Reaped over TLS" in (await call(f"scrape {https_site.url}/page"))["data"]["text"]
        policy.allowed_hosts.clear()  # now the proxy alone would refuse: check it does
        monkeypatch.setattr(policy, "check", no_check)
        refused = await call(f"scrape {https_site.url}/page")
        assert refused["error"]["code"] == "NAVIGATION_FAILED", refused
    finally:
        await proxy.close()


async def no_check(url: str, owner: str) -> None:
    """A policy whose URL check lets everything by (so the proxy's own judgment shows)."""
    return None


async def test_scrape_without_curl_reap_says_how_to_install(call, monkeypatch):
    monkeypatch.setitem(sys.modules, "curl_reap", None)  # import curl_reap now fails
    missing = await call("scrape https://example.com/")
    assert missing["error"]["code"] == "UNAVAILABLE"
    assert "pip install curl-reap" in missing["error"]["message"]


@pytest.mark.parametrize(
    "url", ["http://example.com/", "file:///etc/passwd", "javascript:alert(1)", "data:text/html,x"]
)
async def test_scrape_refuses_anything_but_https(call, url):
    refused = await call({"tool": "scrape", "params": {"url": url}})
    assert refused["error"]["code"] == "REFUSED", refused
