"""The ``/live`` page: a static shell a person's browser may load, holding no data.

Its address carries the watch-only token in the fragment (``/live#TOKEN``), which a browser
never sends to a server; the page's script removes it from the address bar and sends it as
the first message of a WebSocket to ``/live`` on the same origin.  Only after the token is
checked does the daemon send anything: frames, the current tab, the last commands.  The
socket is for watching only; nothing sent on it after the token is run.  The shell is
served with a strict Content-Security-Policy (its own script and style by hash, pictures
from ``data:`` only, no framing), and every text shown goes in through ``textContent``.
"""

from __future__ import annotations

import base64
import hashlib
from http import HTTPStatus

from websockets.datastructures import Headers
from websockets.http11 import Response

STYLE = """
body { font: 14px system-ui, sans-serif; margin: 0; background: #111; color: #eee; }
header { padding: 8px 12px; background: #222; }
#url { color: #9cf; word-break: break-all; }
main { display: flex; gap: 12px; padding: 12px; }
#screen { max-width: 75vw; border: 1px solid #444; background: #000; }
ol { margin: 0; padding-left: 20px; font-size: 12px; }
.off { color: #f88; }
"""

SCRIPT = """
const token = decodeURIComponent(location.hash.slice(1));
history.replaceState(null, "", location.pathname);
const $ = (id) => document.getElementById(id);
const ws = new WebSocket("ws://" + location.host + "/live");
ws.onopen = () => ws.send(JSON.stringify({ token }));
ws.onclose = () => { $("state").textContent = "disconnected"; $("state").className = "off"; };
ws.onmessage = (e) => {
  const m = JSON.parse(e.data);
  if (m.type === "event" && m.event === "stream_frame") {
    $("screen").src = "data:image/" + m.data.format + ";base64," + m.data.data;
    $("screen").dataset.seq = m.data.seq;
  } else if (m.type === "live") {
    $("state").textContent = m.stream.on ? "streaming " + m.stream.fps + " fps" : "stream off";
    $("state").className = m.stream.on ? "" : "off";
    $("url").textContent = m.url || "";
    $("title").textContent = m.title || "";
    const list = $("commands");
    list.replaceChildren(...m.recent.map((c) => {
      const li = document.createElement("li");
      const who = c.controller + " (" + c.transport + ")";
      li.textContent = c.at + " " + who + ": " + c.tool + " " + c.outcome;
      return li;
    }));
  }
};
"""

PAGE = f"""<!doctype html>
<html><head><meta charset="utf-8"><title>nostr-browserd live</title>
<style>{STYLE}</style></head>
<body><header><b>live</b> <span id="state">connecting</span> ·
<span id="title"></span> · <span id="url"></span></header>
<main><img id="screen" alt="the active tab">
<section><h3>Last commands</h3><ol id="commands"></ol></section></main>
<script>{SCRIPT}</script></body></html>
""".encode()


def _digest(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


POLICY = (
    f"default-src 'none'; script-src {_digest(SCRIPT)}; style-src {_digest(STYLE)}; "
    "img-src data:; connect-src 'self'; base-uri 'none'; form-action 'none'; "
    "frame-ancestors 'none'"
)


def page_response() -> Response:
    """The shell, uncached and unframeable."""
    headers = Headers(
        [
            ("Content-Type", "text/html; charset=utf-8"),
            ("Content-Length", str(len(PAGE))),
            ("Content-Security-Policy", POLICY),
            ("X-Frame-Options", "DENY"),
            ("Referrer-Policy", "no-referrer"),
            ("Cache-Control", "no-store"),
            ("X-Content-Type-Options", "nosniff"),
        ]
    )
    return Response(HTTPStatus.OK.value, HTTPStatus.OK.phrase, headers, PAGE)
