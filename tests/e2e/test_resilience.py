"""End to end: big results in parts, a relay that restarts, a browser that gets killed."""

import base64
import hashlib
import os
import signal
from pathlib import Path

from tests.fixtures.daemon import (
    SdkController,
    daemon_pubkey,
    start_daemon_fixture,  # noqa: F401
    wait_until,
)
from tests.fixtures.site import serve_directory

NOISE_PAGE = """<!doctype html><html><body style="margin:0">
<canvas id="noise" width="320" height="320"></canvas>
<script>
const c = document.getElementById('noise').getContext('2d');
const img = c.createImageData(320, 320);
for (let i = 0; i < img.data.length; i += 65536) {
  crypto.getRandomValues(img.data.subarray(i, i + 65536));
}
for (let i = 3; i < img.data.length; i += 4) img.data[i] = 255;
c.putImageData(img, 0, 0);
</script></body></html>"""


async def test_a_300_kb_screenshot_arrives_in_parts(nostr_relay_url, start_daemon, tmp_path):
    (tmp_path / "noise.html").write_text(NOISE_PAGE)
    server = serve_directory(tmp_path)
    try:
        async with SdkController([nostr_relay_url]) as phone:
            daemon = await start_daemon([nostr_relay_url], controllers=[phone.npub])
            me = await daemon_pubkey(daemon)
            url = f"http://127.0.0.1:{server.server_port}/noise.html"
            assert (await phone.command(me, {"tool": "open", "params": {"url": url}}))["success"]
            shot = await phone.command_parts(
                me, {"tool": "screenshot", "params": {"selector": "#noise"}}, timeout=60
            )
    finally:
        server.shutdown()
        server.server_close()
    assert shot.parts > 10, "a reply this big must travel in parts"
    response = shot.response
    png = base64.b64decode(response["data"]["base64"])
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    assert 250_000 < len(png) == response["data"]["bytes"]
    assert hashlib.sha256(shot.whole.encode()).hexdigest() == shot.sha256


async def test_serving_through_a_relay_restart(local_relay_factory, start_daemon):
    relay = await local_relay_factory()
    async with SdkController([relay.url]) as phone:
        daemon = await start_daemon([relay.url], controllers=[phone.npub])
        me = await daemon_pubkey(daemon)
        assert (await phone.command(me, {"tool": "get_url"}))["success"]
        await relay.restart()  # in memory: it comes back empty, every client is dropped
        await wait_until(lambda: daemon.link.relay_status()[relay.url].state != "connected", 10)
        await wait_until(lambda: daemon.link.relay_status()[relay.url].state == "connected", 30)
        answer = await phone.command(me, {"tool": "get_url"}, timeout=30)
        assert answer["success"]


def _is_chromium(pid: int) -> bool:
    try:
        return b"chrom" in Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0]
    except OSError:
        return False


def chromium_main_processes(root: int | None = None) -> set[int]:
    """Descendants of ``root`` (default: this process) that are a browser's main process
    (a Chromium whose parent is not)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(parent, []).append(int(entry.name))
    found, stack = set(), [os.getpid() if root is None else root]
    while stack:
        parent = stack.pop()
        for child in children.get(parent, []):
            stack.append(child)
            if _is_chromium(child) and not _is_chromium(parent):
                found.add(child)
    return found


async def test_serving_through_a_killed_browser(nostr_relay_url, site_url, start_daemon):
    before = chromium_main_processes()
    async with SdkController([nostr_relay_url]) as phone:
        daemon = await start_daemon([nostr_relay_url], controllers=[phone.npub])
        me = await daemon_pubkey(daemon)
        url = f"{site_url}/form.html"
        assert (await phone.command(me, {"tool": "open", "params": {"url": url}}))["success"]
        ours = chromium_main_processes() - before
        assert len(ours) == 1
        os.kill(ours.pop(), signal.SIGKILL)
        await wait_until(lambda: not daemon.browser.alive, 10)
        hit = await phone.command(me, {"tool": "get_url"})
        # The daemon knew the browser was dead before this command: it is the one that hit it.
        assert hit["success"] is False and hit["error"]["code"] == "BROWSER_CRASHED", hit
        assert daemon.browser.alive, "relaunched by the command that met the crash"
        again = await phone.command(me, {"tool": "open", "params": {"url": url}})
        assert again["success"], again
        assert (await phone.command(me, {"tool": "get_title"}))["data"]["title"] == "Form"
