"""Files on disk: uploads only from the uploads directory, downloads, saved login states;
and scrape, which fetches without the browser."""

import base64
import hashlib
import os
import stat
import sys

import pytest

from nostr_browserd.errors import BrowserdError
from nostr_browserd.tools import fetch as scrape


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
    for command in ("upload #one a.txt", "download #dl", "state_save login"):
        assert (await call(command))["error"]["code"] == "UNAVAILABLE", command


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


async def test_states_are_private_to_their_owner(call, site_url, dirs, browser_pool, session):
    await call(f"open {site_url}/catalog.html")
    await call("cookies_set sid abc123")
    await call("storage_local_set theme dark")
    saved = await call("state_save work")
    assert saved["data"]["cookies"] == 1 and saved["data"]["origins"] == 1, saved
    path = dirs / "state" / session.owner / "work.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert (await call("state_list"))["data"]["states"] == ["work"]

    await call("cookies_clear")
    await call("storage_local_clear")
    loaded = await call("state_load work")
    assert loaded["success"], loaded
    assert (await call("cookies_get --name sid"))["data"]["cookies"][0]["value"] == "abc123"
    await call("reload")
    assert (await call("storage_local_get_key theme"))["data"]["value"] == "dark"

    for bad in ("../work", "a b", "x" * 65):
        refused = await call({"tool": "state_load", "params": {"name": bad}})
        assert refused["error"]["code"] == "INVALID_PARAMS", bad
    assert (await call("state_load nothing"))["error"]["code"] == "INVALID_PARAMS"

    other = await browser_pool.session("catalog-stranger")
    try:
        from nostr_browserd.commands.catalog import REGISTRY
        from nostr_browserd.commands.protocol import parse_request, run

        theirs = await run(REGISTRY, other, parse_request("state_load work", REGISTRY))
        assert theirs["error"]["code"] == "INVALID_PARAMS"
        listed = await run(REGISTRY, other, parse_request("state_list", REGISTRY))
        assert listed["data"]["states"] == []
    finally:
        await other.close()


@pytest.mark.skipif(scrape.available(), reason="curl_reap is installed here")
async def test_scrape_without_curl_reap_says_how_to_install(call):
    missing = await call("scrape https://example.com/")
    assert missing["error"]["code"] == "UNAVAILABLE"
    assert "pip install 'nostr-browserd[scrape]'" in missing["error"]["message"]


STAND_IN_CLI = """
import sys
args = sys.argv[1:]
if args[0] != "get" or not args[1].startswith("https://"):
    sys.exit("[reap] usage: get <https url> [--max-len N | --html]")
if "missing" in args[1]:
    sys.exit("[reap] HTTP 404 for " + args[1])
form = "html" if "--html" in args else "markdown"
print("fetched " + args[1] + " as " + form + " " + " ".join(args[2:]))
if "long" in args[1]:
    print("x" * 5000)
"""


@pytest.fixture
def stand_in_curl_reap(tmp_path, monkeypatch):
    """A curl_reap on the path of this interpreter and its children (no network needed)."""
    package = tmp_path / "reap-stand-in" / "curl_reap"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "cli.py").write_text(STAND_IN_CLI)
    monkeypatch.syspath_prepend(str(package.parent))
    monkeypatch.setenv("PYTHONPATH", str(package.parent))
    assert scrape.available()


async def test_scrape_runs_curl_reap_and_caps_what_it_returns(
    call, session, stand_in_curl_reap, monkeypatch
):
    fetched = await call("scrape example.org/page")
    assert fetched["success"], fetched
    data = fetched["data"]
    assert data["url"] == "https://example.org/page" and data["truncated"] is False
    assert data["text"].startswith("fetched https://example.org/page as markdown --max-len ")
    html = await call({"tool": "scrape", "params": {"url": "https://x.org/", "format": "html"}})
    assert html["data"]["text"].strip() == "fetched https://x.org/ as html --html"
    failed = await call("scrape https://x.org/missing")
    assert failed["error"]["code"] == "NAVIGATION_FAILED"
    assert "HTTP 404 for https://x.org/missing" in failed["error"]["message"]
    monkeypatch.setattr(session.config, "result_cap", 1000)
    long = await call("scrape https://x.org/long")
    assert long["data"]["truncated"] is True
    assert "--max-len 1000" in long["data"]["text"] and len(long["data"]["text"]) <= 1000


@pytest.mark.parametrize(
    "url", ["http://example.com/", "file:///etc/passwd", "javascript:alert(1)", "data:text/html,x"]
)
async def test_scrape_refuses_anything_but_https(call, url):
    refused = await call({"tool": "scrape", "params": {"url": url}})
    assert refused["error"]["code"] == "REFUSED", refused


async def test_scrape_output_is_bounded_and_timed():
    """The subprocess runner behind scrape: a flood is cut (and stopped), a hang times out."""
    flood = [sys.executable, "-c", "import sys\nwhile True: sys.stdout.write('x' * 65536)"]
    text, _, code = await scrape.run_bounded(flood, 1000, 10)
    assert code == 0 and 1000 < len(text) <= 4004
    fail = [sys.executable, "-c", "import sys; sys.exit('[reap] HTTP 404 for https://x/')"]
    text, error, code = await scrape.run_bounded(fail, 1000, 10)
    assert code == 1 and text == "" and "HTTP 404" in error
    with pytest.raises(BrowserdError) as hang:
        await scrape.run_bounded([sys.executable, "-c", "import time; time.sleep(30)"], 10, 0.5)
    assert hang.value.code == "TIMEOUT"
