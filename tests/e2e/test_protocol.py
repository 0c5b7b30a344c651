"""The protocol: JSON and the text grammar parse to one Request; replies are coded."""

import asyncio
import json
import re

import pytest

from nostr_browserd.browser.urls import resolve
from nostr_browserd.catalog import REGISTRY
from nostr_browserd.commands.protocol import Request, cap, parse_request
from nostr_browserd.commands.render import render_text
from nostr_browserd.daemon.config import ControllerConfig
from nostr_browserd.dm.messages import Incoming
from nostr_browserd.errors import BrowserdError
from nostr_browserd.nostr.signer import KeySigner
from tests.fixtures.browser import local_dispatcher

GRAMMAR = [
    ("open example.com", "open", {"url": "example.com"}),
    ("open what is a browser", "open", {"url": "what is a browser"}),
    ("snapshot -i", "snapshot", {"interactive": True}),
    (
        'snapshot -i -c -d 3 -s "#main .x"',
        "snapshot",
        {"interactive": True, "compact": True, "depth": "3", "selector": "#main .x"},
    ),
    ("snapshot --no-compact --urls", "snapshot", {"compact": False, "urls": True}),
    ("click @e2", "click", {"ref": "@e2"}),
    ("click f1e3", "click", {"ref": "f1e3"}),
    ("click #submit", "click", {"selector": "#submit"}),
    ('fill @e3 "hello world"', "fill", {"ref": "@e3", "value": "hello world"}),
    ("fill @e3 hello  world", "fill", {"ref": "@e3", "value": "hello  world"}),
    (
        'fill #pw "s3 cret" --secret',
        "fill",
        {"selector": "#pw", "value": "s3 cret", "secret": True},
    ),
    ('fill @e3 "-5"', "fill", {"ref": "@e3", "value": "-5"}),
    ("type @e1 abc", "type", {"ref": "@e1", "value": "abc"}),
    ("get text @e1", "get_text", {"ref": "@e1"}),
    ("get text", "get_text", {}),
    ("get attr @e1 href", "get_attr", {"ref": "@e1", "name": "href"}),
    ("get url", "get_url", {}),
    ("get title", "get_title", {}),
    ("tab", "tab_list", {}),
    ("tab t2", "tab_switch", {"tab": "t2"}),
    ("tab new https://example.org/a?b=c", "tab_new", {"url": "https://example.org/a?b=c"}),
    ("tab close t3", "tab_close", {"tab": "t3"}),
    ("press Enter", "press", {"key": "Enter"}),
    ("press Control+a @e4", "press", {"key": "Control+a", "ref": "@e4"}),
    ("scroll down 300", "scroll", {"direction": "down", "amount": "300"}),
    ("wait 500", "wait", {"ms": "500"}),
    ("wait #late", "wait_for", {"selector": "#late"}),
    ("wait for @e9 hidden", "wait_for", {"ref": "@e9", "state": "hidden"}),
    (
        "screenshot -f --format jpeg --quality 50",
        "screenshot",
        {"full_page": True, "format": "jpeg", "quality": "50"},
    ),
    ("eval document.cookie = 'a=b'", "eval", {"script": "document.cookie = 'a=b'"}),
    ("dialog accept Ada Lovelace", "dialog_accept", {"value": "Ada Lovelace"}),
    ("help", "help", {}),
    ("help fill", "help", {"tool": "fill"}),
    ("GET URL", "get_url", {}),
]


@pytest.mark.parametrize(("line", "tool", "params"), GRAMMAR)
def test_text_grammar(line, tool, params):
    request = parse_request(line, REGISTRY)
    assert (request.tool, request.params, request.text) == (tool, params, True)
    REGISTRY.validate(request.tool, request.params)  # and the params are valid for the tool


def test_json_request():
    request = parse_request('{"id": 3, "tool": "click", "params": {"ref": "@e1"}}', REGISTRY)
    assert request == Request(id=3, tool="click", params={"ref": "@e1"})
    assert request.text is False
    assert parse_request({"tool": "get_url"}, REGISTRY).params == {}


@pytest.mark.parametrize(
    ("raw", "words"),
    [
        ("{not json", "Not valid JSON"),
        ('{"id": 1}', "tool is missing"),
        ('{"tool": ""}', "tool is missing"),
        ('{"tool": "open", "params": {"url": ' + "[" * 60000 + "}}", "nested deeper"),
        ('{"tool": "open", "params": {"x": ' + "[" * 40 + "]" * 40 + "}}", "nested deeper"),
        ('{"tool": "click", "params": []}', "params must be an object"),
        ('{"tool": "click", "id": [1]}', "id must be"),
        ('fill @e1 "unclosed', "quote is not closed"),
        ("", "Empty command"),
        ("click @e1 @e2", "usage: click <@ref|selector>"),
        ("snapshot -d", "-d needs a value"),
    ],
)
def test_bad_requests_are_invalid_params(raw, words):
    with pytest.raises(BrowserdError) as caught:
        parse_request(raw, REGISTRY)
    assert caught.value.code == "INVALID_PARAMS"
    assert words in caught.value.message


def test_unknown_tool_suggests():
    with pytest.raises(BrowserdError) as caught:
        parse_request("snap", REGISTRY)
    assert caught.value.code == "UNKNOWN_TOOL"
    assert "snapshot" in caught.value.message


def test_cap_cuts_the_longest_text_and_flags_it():
    data = {"text": "x" * 50_000, "url": "http://a", "base64": "A" * 100_000}
    capped = cap(data, 20_000)
    assert capped["truncated"] is True and "Result cut" in capped["note"]
    assert len(capped["text"]) < 20_000 and capped["base64"] == data["base64"]
    assert cap({"text": "short"}, 20_000) == {"text": "short"}


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("example.com", "https://example.com"),
        ("example.com/path?q=1", "https://example.com/path?q=1"),
        ("localhost:8080/x", "http://localhost:8080/x"),
        ("127.0.0.1:9000", "http://127.0.0.1:9000"),
        ("http://example.com", "http://example.com"),
        ("about:blank", "about:blank"),
        ("python tutorial", "https://duckduckgo.com/?q=python+tutorial"),
        ("python", "https://duckduckgo.com/?q=python"),
    ],
)
def test_addresses_resolve_like_an_address_bar(url, expected):
    assert resolve(url, ["http", "https", "about"], "https://duckduckgo.com/?q={query}") == expected


@pytest.mark.parametrize(
    "url",
    [
        "file:///etc/passwd",
        "javascript:alert(1)",
        "data:text/html,x",
        "chrome://settings",
        "ftp://x.org",
    ],
)
def test_other_schemes_are_refused(url):
    with pytest.raises(BrowserdError) as caught:
        resolve(url, ["http", "https", "about"], "https://s/?q={query}")
    assert caught.value.code == "REFUSED"


def test_render_text_reads_well():
    assert render_text(
        {"success": False, "error": {"code": "STALE_REF", "message": "Take a new snapshot."}}
    ) == ("✗ STALE_REF: Take a new snapshot.")
    reply = render_text(
        {
            "success": True,
            "data": {
                "snapshot": '- button "Go" [ref=e1]',
                "refs": 1,
                "truncated": False,
                "url": "http://a/",
                "title": "A",
                "tab": "t1",
                "dialog": {"type": "confirm", "message": "Sure?"},
            },
        }
    )
    assert reply.splitlines() == [
        '- button "Go" [ref=e1]',
        "refs: 1",
        "truncated: no",
        "[t1] A http://a/",
        "⚠ confirm dialog open: 'Sure?': reply dialog accept | dialog dismiss",
    ]


def test_render_text_nests_lists_names_binaries_and_keeps_to_the_limit():
    data = {
        "base64": "iVBORw0KGgo=" * 2000,
        "mime": "image/png",
        "bytes": 18_000,
        "legend": [{"n": 1, "ref": "@e2", "role": "button", "name": "Go"}],
        "windows": [{"window": "w1", "tabs": [{"tab": "t1", "active": True, "title": None}]}],
        "tab": "t1",
    }
    assert render_text({"success": True, "data": data}).splitlines() == [
        "<png, 18 KB: ask in JSON for the data>",
        "legend:",
        "  - n: 1, ref: @e2, role: button, name: Go",
        "windows:",
        "  - window: w1",
        "    tabs:",
        "      - tab: t1, active: yes",
        "[t1]",
    ]
    many = {"entries": [{"type": "log", "text": "x" * 50} for _ in range(100)], "tab": "t1"}
    lines = render_text({"success": True, "data": many}, limit=1000).splitlines()
    assert len("\n".join(lines[:-2])) <= 1000 and lines[-2].startswith("… [cut ")
    assert lines[-1] == "[t1]"


# --- through a session ----------------------------------------------------------------


async def test_help_lists_every_tool_with_gating(call):
    tools = (await call("help"))["data"]["tools"]
    names = {t["name"]: t["gated"] for t in tools}
    phase1 = [
        "open",
        "snapshot",
        "click",
        "fill",
        "type",
        "press",
        "hover",
        "focus",
        "scroll",
        "screenshot",
        "eval",
        "get_text",
        "get_html",
        "get_attr",
        "get_url",
        "get_title",
        "back",
        "forward",
        "reload",
        "wait",
        "wait_for",
        "tab_list",
        "tab_new",
        "tab_switch",
        "tab_close",
        "close",
    ]
    assert set(phase1) <= set(names)
    assert names["click"] and names["open"] and names["eval"]
    assert not names["snapshot"] and not names["get_text"] and not names["tab_list"]
    one = (await call("help fill"))["data"]
    assert one["usage"] == "usage: fill <@ref|selector> <value…> [--secret]"
    assert one["params"]["properties"]["value"]["type"] == "string"


async def test_help_and_the_schema_export_cover_every_tool(call):
    """The catalog issue: help and the JSON Schema export list every tool, each with its
    gating, its docstring as description and a params schema."""
    from nostr_browserd.catalog import REGISTRY

    registered = [t.name for t in REGISTRY]
    assert len(registered) == len(set(registered)) > 100
    listed = (await call("help"))["data"]["tools"]
    assert [t["name"] for t in listed] == registered
    schemas = REGISTRY.schemas()
    assert [s["name"] for s in schemas] == registered
    for schema in schemas:
        tool = REGISTRY.get(schema["name"])
        assert isinstance(schema["gated"], bool) and schema["gated"] is tool.gated
        assert schema["description"] and schema["description"] in tool.handler.__doc__
        assert schema["params"]["type"] == "object", schema["name"]
        assert schema["params"].get("additionalProperties") is False, schema["name"]
        one = (await call({"tool": "help", "params": {"tool": schema["name"]}}))["data"]
        assert one["params"] == schema["params"] and one["usage"].startswith("usage: ")


async def test_invalid_params_name_the_field(call):
    response = await call({"id": "x", "tool": "click", "params": {"ref": "@e1", "selector": "a"}})
    assert response["id"] == "x" and response["error"]["code"] == "INVALID_PARAMS"
    response = await call({"tool": "fill", "params": {"ref": "@e1"}})
    assert "value: Field required" in response["error"]["message"]
    response = await call({"tool": "click", "params": {"ref": "@e1", "force": True}})
    assert "force: Extra inputs are not permitted" in response["error"]["message"]


async def test_timeout_is_reported(call, site_url):
    await call(f"open {site_url}/slow.html")
    response = await call({"tool": "wait_for", "params": {"selector": "#never", "timeout_ms": 100}})
    assert response["error"]["code"] == "TIMEOUT"


async def test_a_message_is_answered_in_kind(message, site_url):
    text = await message(f"open {site_url}/index.html")
    assert text.startswith("status: 200\n[t1] Test site http://")
    reply = json.loads(await message('{"id": 9, "tool": "get_title"}'))
    assert reply == {
        "id": 9,
        "success": True,
        "data": {
            "title": "Test site",
            "url": f"{site_url}/index.html",
            "tab": "t1",
            "dialog": None,
        },
    }
    assert (await message("frobnicate")).startswith("✗ UNKNOWN_TOOL")
    bad = json.loads(await message("{oops"))
    assert bad["error"]["code"] == "INVALID_PARAMS"


async def test_text_replies_show_nested_results_without_reprs_or_base64(message, site_url):
    text = message

    await text(f"open {site_url}/devtools.html")
    await text("click #log")
    console = await text("console")
    assert console.startswith(
        f"entries:\n  - level: log, text: plain note, source: {site_url}/devtools.html:4\n"
    )
    await text("cookies_set flavour oat")
    cookies = await text("cookies_get")
    assert "\n  - name: flavour, value: oat, domain: 127.0.0.1, path: /," in cookies
    help_fill = await text("help fill")
    assert "\n  value (string, required): the text to put in the field\n" in help_fill
    shot = await text("screenshot")
    assert re.fullmatch(r"<png, \d+ KB: ask in JSON for the data>", shot)  # the tab: unmoved
    annotated = await text("screenshot_annotated")
    assert re.search(r"^  - n: 1, ref: @e\d+, role: button, name: Log$", annotated, re.M)
    for reply in (console, cookies, help_fill, shot, annotated):
        assert not re.search(r"[{}]|'\w+': |True|False|None|iVBOR", reply), reply


@pytest.mark.parametrize("scheme", ["nip17", "nip04"])
async def test_a_dm_text_reply_keeps_to_the_configured_result_cap(
    browser_pool, tmp_path, monkeypatch, scheme
):
    """A result cap set above the default holds for text replies by DM (it was ignored)."""
    monkeypatch.setattr(browser_pool.config, "result_cap", 50_000)
    phone = KeySigner.generate().pubkey
    replies: asyncio.Queue[str] = asyncio.Queue()

    async def reply(incoming: Incoming, wire: str, request_id: object) -> bool:
        replies.put_nowait(wire)
        return True

    controllers = {phone: ControllerConfig(pubkey=phone)}
    dispatcher = local_dispatcher(browser_pool, tmp_path, reply, controllers)
    try:
        answers = []
        for line in ("eval 'x'.repeat(30000)", "eval 'y'.repeat(60000)"):
            dispatcher.submit(Incoming(phone, scheme, line, "e" * 64, "f" * 64, 0))
            answers.append(await replies.get())
    finally:
        await dispatcher.close()
        await dispatcher.store.close()
        await (await browser_pool.session(phone)).close()
    whole, cut = answers
    assert "x" * 30_000 in whole and "cut" not in whole  # the default cap (20,000) would cut it
    assert "y" * 40_000 in cut and "y" * 50_000 not in cut and "cut" in cut


async def test_the_tab_line_comes_when_it_is_news(message, call, site_url):
    opened = await message(f"open {site_url}/lists.html")
    place = f"[t1] Lists {site_url}/lists.html"
    assert opened.splitlines()[-1] == place  # opening: where the tab is, is the answer
    snap = await message("snapshot -i")
    assert "[t1]" not in snap  # nothing moved since the open said where
    save = re.search(r'button "Save" @(\w+)', snap).group(1)
    clicked = await message(f"click @{save}")
    assert clicked.splitlines()[-1] == f"[t1] Saved {site_url}/lists.html"  # the title changed
    assert "[t1]" not in await message("get text main")
    assert await message("get title") == f"[t1] Saved {site_url}/lists.html"  # its answer
    for _ in range(2):  # navigating says where, even when the last reply said the same
        assert (await message("reload")).splitlines()[-1] == place
    # JSON keeps the tab's state in every result, and says it is unchanged
    data = (await call("get text main"))["data"]
    assert (data["tab"], data["url"], data["same_place"]) == ("t1", f"{site_url}/lists.html", True)
