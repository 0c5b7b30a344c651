"""Waiting for text, addresses, load states and predicates; batches of commands."""

import asyncio
import json

import pytest

from nostr_browserd.catalog import REGISTRY
from nostr_browserd.commands.protocol import parse_request, run
from nostr_browserd.tools.wait import glob_source


@pytest.fixture
async def page(call, site_url):
    opened = await call(f"open {site_url}/catalog.html")
    assert opened["success"], opened
    return call


async def test_waits_for_text_url_load_and_predicates(page):
    await page("click #later")  # text and a pushState address arrive 150 ms later
    assert (await page("wait_for_text Ready now"))["data"]["found"] == "Ready now"
    assert (await page("wait_for_url **/catalog.html#done"))["success"]
    regex = await page({"tool": "wait_for_url", "params": {"pattern": r"#d.ne$", "regex": True}})
    assert regex["success"], regex
    assert (await page("wait_for_load networkidle"))["data"]["state"] == "networkidle"
    fn = await page("wait_for_fn () => document.title.length")
    assert fn["data"]["result"] == len("Catalog")

    text = await page("wait_for_text Never there --timeout-ms 200")
    assert text["error"]["code"] == "TIMEOUT" and "Never there" in text["error"]["message"]
    url = await page("wait_for_url **/elsewhere --timeout-ms 200")
    assert url["error"]["code"] == "TIMEOUT" and "**/elsewhere" in url["error"]["message"]
    fn = await page("wait_for_fn () => false --timeout-ms 200")
    assert fn["error"]["code"] == "TIMEOUT"
    bad = await page({"tool": "wait_for_url", "params": {"pattern": "(", "regex": True}})
    assert bad["error"]["code"] == "INVALID_PARAMS"
    assert (await page("wait_for_fn () => { throw 1 }"))["error"]["code"] == "INVALID_PARAMS"
    over = await page("wait_for_text x --timeout-ms 600000")
    assert over["error"]["code"] == "INVALID_PARAMS"
    assert (await page("get_title"))["success"]  # the session still works


def batch(*commands, **options):
    return {"tool": "batch", "params": {"commands": list(commands), **options}}


async def test_batch_runs_in_order_and_stops_at_a_failure(page):
    ran = await page(
        batch(
            {"tool": "fill", "params": {"selector": "#city", "value": "Oslo"}},
            {"tool": "get_value", "params": {"selector": "#city"}},
        )
    )
    assert ran["data"]["ok"] and ran["data"]["results"][1]["data"]["value"] == "Oslo", ran

    stopped = await page(
        batch(
            {"tool": "click", "params": {"selector": "#nothing"}},
            {"tool": "fill", "params": {"selector": "#city", "value": "Rome"}},
        )
    )
    assert stopped["data"]["ok"] is False and stopped["data"]["ran"] == 1
    assert stopped["data"]["results"][0]["error"]["code"] == "ELEMENT_NOT_FOUND"
    assert (await page("get_value #city"))["data"]["value"] == "Oslo"

    going = await page(
        batch(
            {"tool": "nope", "params": {}},
            {"tool": "fill", "params": {"selector": "#city", "value": "Rome"}},
            continue_on_error=True,
        )
    )
    assert going["data"]["failed"] == [0] and going["data"]["results"][1]["success"]

    nested = await page(batch({"tool": "batch", "params": {"commands": []}}))
    assert nested["data"]["results"][0]["error"]["code"] == "INVALID_PARAMS"
    as_text = await page('batch [{"tool": "get_value", "params": {"selector": "#city"}}]')
    assert as_text["data"]["results"][0]["data"]["value"] == "Rome", as_text
    too_many = await page(batch(*[{"tool": "get_url"}] * 51))
    assert too_many["error"]["code"] == "INVALID_PARAMS"


async def test_batch_stops_at_a_dialog(call, site_url):
    await call(f"open {site_url}/dialogs.html")
    ran = await call(
        batch(
            {"tool": "click", "params": {"selector": "#confirm"}},
            {"tool": "get_text", "params": {"selector": "#out"}},
            continue_on_error=True,
        )
    )
    assert ran["data"]["dialog"]["type"] == "confirm", ran
    assert ran["data"]["ran"] == 1  # the read after the click waits for the answer
    assert (await call("dialog accept"))["success"]
    assert (await call("get_text #out"))["data"]["text"] == "yes"


def test_tools_run_by_and_gating_look_inside():
    tools_run_by, is_gated = REGISTRY.tools_run_by, REGISTRY.is_gated
    reads = {"commands": [{"tool": "get_url"}, {"tool": "find_text", "params": {"text": "a"}}]}
    assert tools_run_by("batch", reads) == ["get_url", "find_text"]
    assert is_gated("batch", reads) is False
    acts = {"commands": [{"tool": "find_text", "params": {"text": "a", "action": "click"}}]}
    assert tools_run_by("batch", acts) == ["find_text", "click"]
    assert is_gated("batch", acts) is True
    assert tools_run_by("find_role", {"role": "button", "action": "hover"}) == [
        "find_role",
        "hover",
    ]
    assert is_gated("find_role", {"role": "button"}) is False
    assert is_gated("find_role", {"role": "button", "action": "hover"}) is True
    assert is_gated("find_role", {"role": "button", "action": "scroll_into_view"}) is False
    assert is_gated("get_text", {}) is False and is_gated("click", {}) is True


async def test_a_pattern_that_backtracks_holds_nobody(page, site_url, browser_pool):
    """Matched in the daemon, ``(.|.)*!`` on a long address froze the event loop: every
    controller and the inbox.  Matched in the page, another controller is served meanwhile."""
    assert (await page(f"open {site_url}/catalog.html?q={'a' * 5000}"))["success"]
    params = {"pattern": "(.|.)*!", "regex": True, "timeout_ms": 2000}
    waiting = asyncio.create_task(page({"tool": "wait_for_url", "params": params}))
    other = await browser_pool.session("another-controller")
    try:
        served = await run(REGISTRY, other, parse_request("get url", REGISTRY))
        assert served["success"] and served["data"]["url"] == "about:blank"
    finally:
        await other.close()
    assert (await waiting)["error"]["code"] == "TIMEOUT"
    assert (await page("get title"))["success"]  # the tab itself is not held either


@pytest.mark.parametrize(
    ("glob", "url", "matches"),
    [
        ("**/catalog.html#done", "http://127.0.0.1:1/catalog.html#done", True),
        ("**/catalog.html#done", "http://127.0.0.1:1/catalog.html#donex", False),
        ("http://*/a?b=1", "http://h/a?b=1", True),  # ? is itself: addresses have queries
        ("http://*/a?b=1", "http://h/aXb=1", False),
        ("http://*/a", "http://h/x/a", False),  # * stops at /
        ("**/{a,b}.html", "http://h/b.html", True),
        ("**/{a,b}.html", "http://h/c.html", False),
        ("**/é😀.(x)", "http://h/é😀.(x)", True),
    ],
)
async def test_globs_become_anchored_expressions(page, glob, url, matches):
    script = f"new RegExp({json.dumps(glob_source(glob))}).test({json.dumps(url)})"
    assert (await page({"tool": "eval", "params": {"script": script}}))["data"]["result"] is matches
