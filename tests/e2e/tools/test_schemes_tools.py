"""Scheme rules beyond tool inputs: a new window, a page's link, a page's script and a server's
redirect cannot take a tab to ``file:`` or ``data:``; each leaves the tab where it was."""

from __future__ import annotations

from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler

import pytest

from tests.fixtures.site import serving

START = b"""<title>Start</title>
<a id=file href="file:///etc/passwd">file link</a>
<a id=data href="data:text/html,<title>Data</title>">data link</a>
<a id=fine href="/fine">fine link</a>
<button id=js-file onclick="document.title='tried'; location='file:///etc/passwd'">js</button>
<button id=js-data onclick="document.title='tried'; location='data:text/html,x'">js</button>
"""


class Pages(BaseHTTPRequestHandler):
    """/start (links and scripts out), /fine, and redirects to file: and data:."""

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        targets = {"/to-file": "file:///etc/passwd", "/to-data": "data:text/html,<b>x</b>"}
        if self.path in targets:
            self.send_response(302)
            self.send_header("Location", targets[self.path])
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        body = START if self.path == "/start" else b"<title>Fine</title><p>fine</p>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture(scope="module")
def pages() -> Iterator[str]:
    with serving(Pages) as url:
        yield url


async def url_of(call) -> str:
    return (await call("get url"))["data"]["url"]


async def test_window_new_refuses_file(call, pages):
    assert (await call(f"open {pages}/start"))["success"]
    windows = await call("window_list")
    refused = await call({"tool": "window_new", "params": {"url": "file:///etc/passwd"}})
    assert refused["error"]["code"] == "REFUSED", refused
    assert await call("window_list") == windows
    assert await url_of(call) == f"{pages}/start"


@pytest.mark.parametrize("link", ["file", "data"])
async def test_a_page_link_out_of_the_schemes_goes_nowhere(call, pages, link):
    assert (await call(f"open {pages}/start"))["success"]
    # The same click on an allowed link does navigate (so the click itself works).
    assert (await call("click #fine"))["success"]
    assert (await call("wait_for_url **/fine"))["success"]
    assert (await call("back"))["success"] and await url_of(call) == f"{pages}/start"
    clicked = await call(f"click #{link}")
    assert await url_of(call) == f"{pages}/start", clicked
    tabs = (await call("tab_list"))["data"]["tabs"]
    assert [t["url"] for t in tabs] == [f"{pages}/start"]


@pytest.mark.parametrize("target", ["file", "data"])
async def test_a_page_script_cannot_set_location_out_of_the_schemes(call, pages, target):
    assert (await call(f"open {pages}/start"))["success"]
    await call(f"click #js-{target}")
    assert (await call("get title"))["data"]["title"] == "tried"  # the script ran
    assert await url_of(call) == f"{pages}/start"


@pytest.mark.parametrize("target", ["file", "data"])
async def test_a_server_redirect_out_of_the_schemes_is_refused(call, pages, target):
    assert (await call(f"open {pages}/start"))["success"]
    redirected = await call(f"open {pages}/to-{target}")
    assert not redirected["success"], redirected
    assert await url_of(call) == f"{pages}/start"
