"""Console, errors, highlight, the request log, routes, HAR and trace, through the protocol."""

import base64
import contextlib
import io
import json
import zipfile
from collections.abc import Iterator
from typing import Any

from playwright.async_api import Page


@contextlib.contextmanager
def requests_sent(page: Page) -> Iterator[list[str]]:
    """The URLs of the requests Playwright's driver sends this process meanwhile (each one a
    Request object and, for the ones it sends, four messages more), counted where they come in."""
    connection = page._impl_obj._connection  # type: ignore[attr-defined]
    dispatch, sent = connection.dispatch, []

    def counted(message: dict[str, Any]) -> None:
        if message.get("method") == "__create__" and message["params"]["type"] == "Request":
            sent.append(message["params"]["initializer"]["url"])
        dispatch(message)

    connection.dispatch = counted
    try:
        yield sent
    finally:
        del connection.dispatch


async def test_console_and_errors_of_the_active_tab(devtools):
    call = devtools
    await call("click #log")
    await call("click #throw")
    # A timer queued after the throwing one: its error event is in before this returns.
    await call("wait_for_fn () => new Promise(done => setTimeout(() => done(true)))")
    logged = (await call("console"))["data"]
    assert [(e["level"], e["text"]) for e in logged["entries"]] == [
        ("log", "plain note"),
        ("warning", "careful"),
        ("error", "bad thing"),
    ]
    assert "devtools.html" in logged["entries"][0]["source"]
    assert [e["text"] for e in (await call("console error"))["data"]["entries"]] == ["bad thing"]
    assert (await call("console --limit 1"))["data"]["entries"][0]["text"] == "bad thing"
    assert (await call("console shout"))["error"]["code"] == "INVALID_PARAMS"

    errors = (await call("errors"))["data"]
    assert errors["count"] == 1 and "kaboom" in errors["entries"][0]["message"]
    assert "devtools.html" in errors["entries"][0]["stack"]

    # another tab has its own log
    await call("tab_new")
    assert (await call("console"))["data"]["count"] == 0
    await call("tab_switch t1")
    assert (await call("console --clear"))["data"]["count"] == 3
    assert (await call("console"))["data"]["count"] == 0
    assert (await call("errors --clear"))["data"]["cleared"]
    assert (await call("errors"))["data"]["entries"] == []


async def test_highlight_shows_in_a_screenshot_and_goes_away(devtools):
    call = devtools

    async def shot():
        return (await call("screenshot"))["data"]["base64"]

    plain = await shot()
    assert (await call("highlight #title"))["data"]["highlighted"]
    assert await shot() != plain
    assert (await call("highlight --clear"))["data"]["highlighted"] is False
    assert await shot() == plain
    assert (await call("highlight #nothing"))["error"]["code"] == "ELEMENT_NOT_FOUND"


async def test_request_log_and_details_redact_credentials(devtools, site_url):
    call = devtools
    await call("click #fetch")
    await call("wait_for_text some notes")
    listed = (await call("network_requests"))["data"]["requests"]
    assert [(r["method"], r["type"], r["status"]) for r in listed[:1]] == [("GET", "document", 200)]
    fetched = (await call("network_requests notes.txt"))["data"]["requests"]
    assert len(fetched) == 1 and fetched[0]["type"] == "fetch"
    assert fetched[0]["size"] == len((await call("get_text #out"))["data"]["text"]) + 1
    assert (await call("network_requests --type fetch"))["data"]["count"] == 1

    detail = (await call(f"network_request {fetched[0]['id']}"))["data"]
    assert detail["request_headers"]["authorization"] == "[redacted]"
    assert "tok123" not in json.dumps(detail)
    assert detail["body"] == "some notes\n"
    assert detail["response_headers"]["content-type"].startswith("text/plain")
    assert detail["timing"]["responseEnd"] >= 0
    page = (await call(f"network_request {listed[0]['id']} --no-body"))["data"]
    assert "body" not in page and page["url"] == f"{site_url}/devtools.html"
    assert (await call("network_request r999999"))["error"]["code"] == "ELEMENT_NOT_FOUND"
    assert (await call("network_request 12"))["error"]["code"] == "INVALID_PARAMS"

    await call(f"tab_new {site_url}/counter.html")
    other = (await call("network_requests"))["data"]["requests"][0]["id"]
    assert (await call("tab_close"))["success"]
    assert (await call(f"network_request {other}"))["error"]["code"] == "ELEMENT_NOT_FOUND"


async def test_a_load_sends_its_requests_to_python_only_when_asked(call, session, site_url):
    """A load's subresources cost this process nothing until network_requests asks for them
    (Playwright's driver keeps a tab's last 100), asking leaves no later load paying, and a
    failure is still told."""
    page, script = f"{site_url}/counter.html", f"{site_url}/count.js"
    ids = []
    for _ in range(2):
        with requests_sent(session.page) as sent:
            assert (await call(f"open {page}"))["success"]
        assert sent == [page], "only the navigation's own request"
        listed = (await call("network_requests"))["data"]["requests"]
        assert [(r["url"], r["status"]) for r in listed[-2:]] == [(page, 200), (script, 200)]
        ids.append([r["id"] for r in listed])
    assert ids[1][:2] == ids[0] and len(set(ids[1])) == 4, "an id stays with its request"

    refused = "http://127.0.0.1:1/refused.txt"  # Chromium refuses port 1 itself
    with requests_sent(session.page) as sent:
        fetched = f"wait_for_fn () => fetch('{refused}').then(() => false, () => true)"
        assert (await call(fetched))["success"]
    assert sent == [refused], "a failed request is sent, to tell why"
    failed = (await call("network_requests refused"))["data"]["requests"]
    assert [(r["status"], r["failure"]) for r in failed] == [(None, "net::ERR_UNSAFE_PORT")]


async def test_a_har_records_every_request_of_a_load_until_stopped(call, session, site_url):
    """Only while a HAR records does each request of a load come to this process."""
    page = f"{site_url}/counter.html"
    assert (await call("har_start"))["success"]
    assert (await call(f"open {page}"))["success"]
    stopped = (await call("har_stop"))["data"]
    har = json.loads(base64.b64decode(stopped["base64"]))
    urls = [e["request"]["url"] for e in har["log"]["entries"]]
    assert urls == [page, f"{site_url}/count.js"]
    with requests_sent(session.page) as sent:
        assert (await call(f"open {page}"))["success"]
    assert sent == [page]


async def test_network_requests_are_the_tabs_last_100(devtools, site_url):
    """Playwright's driver keeps a tab's last 100 requests (dropping the oldest ten when
    over), and network_requests says that older ones are gone."""
    call = devtools
    fetches = "[...Array(105).keys()].map(i => fetch(`notes.txt?${i}`))"
    many = f"() => Promise.all({fetches}).then(() => true)"
    assert (await call({"tool": "wait_for_fn", "params": {"script": many}}))["success"]
    listed = (await call("network_requests --limit 100"))["data"]
    assert 91 <= listed["count"] <= 100 and "last 91 to 100" in listed["note"]
    assert listed["requests"][-1]["url"] == f"{site_url}/notes.txt?104"
    assert listed["requests"][0]["url"] != f"{site_url}/devtools.html"
    assert (await call("network_requests --limit 101"))["error"]["code"] == "INVALID_PARAMS"


async def test_routes_block_and_fulfil_until_unrouted(devtools):
    call = devtools
    routed = await call("network_route **/notes.txt fulfil routed body")
    assert routed["data"]["routes"] == ["**/notes.txt"]
    await call("click #fetch")
    await call("wait_for_text routed body")
    assert (await call("network_route **/*.txt block"))["success"]
    assert (await call("network_route **/x block --status 404"))["error"]["code"] == (
        "INVALID_PARAMS"
    )
    assert (await call("network_unroute **/notes.txt"))["data"]["routes"] == ["**/*.txt"]
    await call("click #fetch")
    await call("wait_for_fn () => true")
    failed = (await call("network_requests notes.txt"))["data"]["requests"][-1]
    assert failed["failure"] and failed["status"] is None
    assert (await call("network_unroute"))["data"]["unrouted"] == ["**/*.txt"]
    assert (await call("network_unroute **/y"))["error"]["code"] == "INVALID_PARAMS"
    await call("click #fetch")
    await call("wait_for_text some notes")


async def test_har_of_the_requests_since_start(devtools, session, site_url, tmp_path, monkeypatch):
    call = devtools
    assert (await call("har_stop"))["error"]["code"] == "INVALID_PARAMS"
    assert (await call("har_start"))["success"]
    await call("click #fetch")
    await call("wait_for_text some notes")
    stopped = (await call("har_stop session1"))["data"]
    assert stopped["name"] == "session1.har" and stopped["stored"] is False
    har = json.loads(base64.b64decode(stopped["base64"]))
    entries = har["log"]["entries"]
    assert stopped["entries"] == len(entries) == 1
    entry = entries[0]
    assert entry["request"]["url"] == f"{site_url}/notes.txt"
    assert entry["response"]["status"] == 200
    assert {"name": "authorization", "value": "[redacted]"} in entry["request"]["headers"]
    assert "tok123" not in json.dumps(har) and str(tmp_path) not in json.dumps(stopped)

    monkeypatch.setattr(session.config, "state_dir", tmp_path)
    await call("har_start")
    kept = (await call("har_stop"))["data"]
    assert kept["stored"] and kept["name"].startswith("har-") and str(tmp_path) not in str(kept)
    assert [p.name for p in tmp_path.glob(f"*/recordings/{kept['name']}")] == [kept["name"]]


async def test_trace_zip_comes_back(devtools):
    call = devtools
    assert (await call("trace_stop"))["error"]["code"] == "INVALID_PARAMS"
    assert (await call("trace_start --no-screenshots"))["success"]
    assert (await call("trace_start"))["error"]["code"] == "INVALID_PARAMS"
    await call("click #grow")
    stopped = (await call("trace_stop mytrace"))["data"]
    assert stopped["name"] == "mytrace.zip"
    archive = zipfile.ZipFile(io.BytesIO(base64.b64decode(stopped["base64"])))
    assert any(name.endswith(".trace") for name in archive.namelist())
    assert stopped["bytes"] == len(base64.b64decode(stopped["base64"]))
