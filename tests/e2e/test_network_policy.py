"""The network policy: DM controllers cannot reach this machine's services, nobody reaches the
daemon's own status page, and the local owner keeps its loopback.

The other tests turn the policy off (the test site is on loopback); here it is at its default.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import urllib.parse

import pytest
from websockets.asyncio.client import connect

from nostr_browserd.browser.config import BrowserConfig
from nostr_browserd.browser.egress import EgressProxy
from nostr_browserd.browser.netpolicy import NetworkPolicy
from tests.fixtures.daemon import (
    SdkController,
    daemon_pubkey,
    start_daemon_fixture,  # noqa: F401
)

DEFAULT = {"block_private_networks": None}  # the fixtures' explicit false, undone


def reach(url: str) -> str:
    """A page script: whether ``url`` answers a fetch (no-cors: CORS cannot be the reason)."""
    return f"fetch('{url}', {{mode: 'no-cors'}}).then(r => 'reached', e => 'blocked')"


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8000/",
        "http://localhost:631/",
        "http://anything.localhost/",
        "http://localhost./",  # Chromium maps the dotted forms to loopback too, without DNS
        "http://x.localhost.:8080/",
        "http://169.254.169.254/latest/meta-data/",
        "http://10.1.2.3/",
        "https://192.168.0.1/",
        "http://100.64.0.1/",
        "http://[::1]:22/",
        "http://[::ffff:127.0.0.1]/",
        "http://[::ffff:10.0.0.1]/",
        "http://[64:ff9b::a00:1]/",  # NAT64 of 10.0.0.1
        "http://[64:ff9b::7f00:1]/",  # NAT64 of 127.0.0.1
        "http://[2002:a9fe:a9fe::1]/",  # 6to4 of 169.254.169.254
        "http://[::10.0.0.1]/",  # IPv4-compatible
        "http://[fe80::1]/",
        "http://0.0.0.0:17777/",
        "http://2130706433/",  # 127.0.0.1 as one number
        "ws://127.0.0.1:17778/",
    ],
)
async def test_private_addresses_are_refused_to_dm_controllers(url):
    policy = NetworkPolicy(None, [])
    reason = await policy.check(url, "ab" * 32)
    assert reason is not None and "block_private_networks" in reason
    assert await policy.check(url, "local") is None  # the owner on this machine keeps it


@pytest.mark.parametrize(
    "url",
    [
        "https://93.184.216.34/",
        "http://[64:ff9b::5db8:d822]/",  # NAT64 of 93.184.216.34
        "http://[2002:5db8:d822::1]/",
        "http://[2606:4700::1111]/",
        "about:blank",
        "data:text/html,x",
    ],
)
async def test_public_and_addressless_urls_pass(url):
    assert await NetworkPolicy(None, []).check(url, "ab" * 32) is None


async def test_settings_and_exceptions():
    policy = NetworkPolicy(None, ["127.0.0.1:8000", "printer.lan"])
    policy.deny_port(17777)
    dm = "ab" * 32
    assert await policy.check("http://127.0.0.1:8000/x", dm) is None
    assert await policy.check("http://127.0.0.1:8001/x", dm) is not None
    for owner in (dm, "local"):  # the daemon's own port: to everyone, allowed or not
        for url in (
            "http://127.0.0.1:17777/",
            "http://localhost:17777/",
            "http://localhost.:17777/",
            "http://x.localhost.:17777/",
            "ws://[::1]:17777/",
        ):
            assert "own local channel" in (await policy.check(url, owner) or "")
    assert await NetworkPolicy(False, []).check("http://127.0.0.1:8000/", dm) is None
    assert await NetworkPolicy(True, []).check("http://127.0.0.1:8000/", "local") is not None


async def test_a_dm_controller_cannot_load_the_hosts_loopback_services(
    nostr_relay_url, start_daemon, site_url, echo_url, click_counter
):
    """Without routes (the egress proxy judges every connection of a blocked context): what
    a page reaches for is refused before the service sees it, which the service's own count
    shows, against the local owner's page that does reach it."""
    site = urllib.parse.urlsplit(site_url).netloc
    probe = click_counter.page("probe")
    async with SdkController([nostr_relay_url]) as phone:
        daemon = await start_daemon(
            [nostr_relay_url],
            controllers=[phone.npub],
            browser={**DEFAULT, "allowed_hosts": [site]},
        )
        me = await daemon_pubkey(daemon)

        async def command(tool, **params):
            return await phone.command(me, {"tool": tool, "params": params})

        refused = await command("open", url=f"{echo_url}/headers")
        assert refused["error"]["code"] == "FORBIDDEN", refused
        assert "private address" in refused["error"]["message"]
        # The allowed site loads, but what it reaches for on another loopback port does not.
        assert (await command("open", url=f"{site_url}/form.html"))["success"]
        status = daemon.browser.status()[0]["network_policy"]
        assert status == "egress proxy", status
        fetched = await command("eval", script=reach(probe))
        assert fetched["success"] and click_counter.loads["probe"] == 0, fetched
        relay = nostr_relay_url  # a WebSocket service on this machine's loopback
        socket = (
            f"new Promise(r => {{ const w = new WebSocket('{relay}'); "
            "w.onopen = () => r('reached'); w.onclose = () => r('blocked'); })"
        )
        ws_probe = await command("eval", script=socket)
        assert ws_probe.get("data", {}).get("result") == "blocked", ws_probe
        for url in (f"{echo_url}/report.csv", "http://169.254.169.254/latest/meta-data/"):
            download = await command("download", url=url)
            assert download["error"]["code"] == "FORBIDDEN", download
        # The local owner, on this machine already, keeps its loopback: the same probe reaches.
        async with connect(daemon.local.url, additional_headers=daemon.local.headers) as ws:
            for n, (tool, params) in enumerate(
                [("open", {"url": echo_url}), ("eval", {"script": reach(probe)})]
            ):
                await ws.send(json.dumps({"id": n, "tool": tool, "params": params}))
                while (answer := await ws.recv()).startswith('{"type": "event"'):
                    pass
                assert json.loads(answer)["success"], answer
        assert click_counter.loads["probe"] == 1


async def test_redirects_to_private_addresses_are_followed_by_the_policy(
    nostr_relay_url, start_daemon, echo_url
):
    """An allowed host that redirects to a private one: the next hop is refused too."""
    echo = urllib.parse.urlsplit(echo_url).netloc
    async with SdkController([nostr_relay_url]) as phone:
        daemon = await start_daemon(
            [nostr_relay_url],
            controllers=[phone.npub],
            browser={**DEFAULT, "allowed_hosts": [echo]},
        )
        me = await daemon_pubkey(daemon)
        private = urllib.parse.quote("http://10.255.255.1/secret", safe="")
        bounce = f"{echo_url}/redirect?to={private}"
        opened = await phone.command(me, {"tool": "open", "params": {"url": bounce}})
        # The next hop went to the egress proxy, which answered in the server's place.
        assert opened["data"]["status"] == 403, opened
        text = await phone.command(me, {"tool": "get_text", "params": {}})
        assert "10.255.255.1 is a private address" in text["data"]["text"], text
        saved = await phone.command(me, {"tool": "download", "params": {"url": bounce}})
        assert saved["error"]["code"] == "FORBIDDEN" and "10.255.255.1" in saved["error"]["message"]


async def test_no_browser_context_shows_the_status_page(nostr_relay_url, start_daemon):
    """open http://127.0.0.1:<port>/ + get_text: nothing of the status, for anyone."""
    async with SdkController([nostr_relay_url]) as phone:
        # The fixtures' policy is off: the block of the daemon's own port holds regardless.
        daemon = await start_daemon([nostr_relay_url], controllers=[phone.npub])
        me = await daemon_pubkey(daemon)
        page = f"http://127.0.0.1:{daemon.local.port}/"
        for url in (page, f"http://localhost:{daemon.local.port}/"):
            opened = await phone.command(me, {"tool": "open", "params": {"url": url}})
            assert opened["error"]["code"] == "FORBIDDEN", opened
            text = await phone.command(me, {"tool": "get_text", "params": {}})
            assert "uptime" not in json.dumps(text) and "version" not in json.dumps(text)
        # A page that goes there itself (no route: the policy is off) is refused by the channel,
        # which a browser's Sec-Fetch-Mode gives away; its socket too (its Origin).
        went = f"location.assign('{page}')"
        assert (await phone.command(me, {"tool": "eval", "params": {"script": went}}))["success"]
        refusal = {"tool": "wait_for_text", "params": {"text": "Browsers may not use this socket"}}
        assert (await phone.command(me, refusal))["success"]
        text = await phone.command(me, {"tool": "get_text", "params": {}})
        assert "uptime" not in json.dumps(text) and "version" not in json.dumps(text)
        agent = f"ws://127.0.0.1:{daemon.local.port}/agent"
        socket = (
            f"new Promise(r => {{ const w = new WebSocket('{agent}'); "
            "w.onopen = () => r('reached'); w.onclose = () => r('blocked'); })"
        )
        ws_probe = await phone.command(me, {"tool": "eval", "params": {"script": socket}})
        assert ws_probe.get("data", {}).get("result") == "blocked", ws_probe
        async with connect(daemon.local.url, additional_headers=daemon.local.headers) as ws:
            await ws.send(json.dumps({"id": 1, "tool": "open", "params": {"url": page}}))
            while (answer := await ws.recv()).startswith('{"type": "event"'):
                pass
        assert json.loads(answer)["error"]["code"] == "FORBIDDEN"


async def test_the_egress_proxy_connects_to_the_address_it_judged():
    """A name answering a public address, then 127.0.0.1 (DNS rebinding): the proxy connects
    to the address it judged, never to the name resolved again."""
    answers = iter([["93.184.216.34"], ["127.0.0.1"]])
    asked, connected = [], []

    async def rebinding(host, owner):
        asked.append(host)
        return [ipaddress.ip_address(a) for a in next(answers)]

    async def stand_in(reader, writer):  # answers in the public server's place, on loopback
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\nConnection: close\r\n\r\npublic")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(stand_in, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]

    async def connect(host, to_port):
        connected.append((host, to_port))
        return await asyncio.open_connection("127.0.0.1", port)

    proxy = EgressProxy(NetworkPolicy(True, [], resolver=rebinding), connect=connect)
    try:
        url = await proxy.url_for("ab" * 32)
        reader, writer = await asyncio.open_connection(
            *urllib.parse.urlsplit(url).netloc.split(":")
        )
        writer.write(b"GET http://rebind.example/ HTTP/1.1\r\nHost: rebind.example\r\n\r\n")
        answer = await asyncio.wait_for(reader.read(), 10)
        writer.close()
    finally:
        await proxy.close()
        server.close()
    assert answer.startswith(b"HTTP/1.1 200") and answer.endswith(b"public"), answer
    assert connected == [("93.184.216.34", 80)] and asked == ["rebind.example"]


class Datagrams(asyncio.DatagramProtocol):
    """A UDP socket on loopback that counts what reaches it."""

    def __init__(self):
        self.count = 0
        self.arrived = asyncio.Event()

    def datagram_received(self, data, addr):
        self.count += 1
        self.arrived.set()


STUN = """new Promise(async (done) => {
  const pc = new RTCPeerConnection({iceServers: [{urls: "stun:127.0.0.1:%d"}]});
  pc.createDataChannel("x");
  pc.onicegatheringstatechange = () => pc.iceGatheringState === "complete" && done("gathered");
  await pc.setLocalDescription(await pc.createOffer());
})"""


@pytest.mark.parametrize("where", ["here", "run-server"])
async def test_webrtc_sends_no_udp_around_the_policy(
    nostr_relay_url, start_daemon, browser_servers, where
):
    """A page's RTCPeerConnection asks a STUN server on loopback: not one datagram arrives,
    from the Chromium launched here or from a browser server's."""
    browser = dict(DEFAULT)
    if where == "run-server":
        server = await browser_servers("run-server")
        browser |= {"endpoints": [server.url], "executable": BrowserConfig().find_executable()}
    loop = asyncio.get_running_loop()
    transport, counter = await loop.create_datagram_endpoint(Datagrams, local_addr=("127.0.0.1", 0))
    port = transport.get_extra_info("sockname")[1]
    try:
        async with SdkController([nostr_relay_url]) as phone:
            daemon = await start_daemon(
                [nostr_relay_url], controllers=[phone.npub], browser=browser
            )
            me = await daemon_pubkey(daemon)
            params = {"script": STUN % port}
            gathering = asyncio.ensure_future(phone.command(me, {"tool": "eval", "params": params}))
            arrived = asyncio.ensure_future(counter.arrived.wait())
            await asyncio.wait([gathering, arrived], return_when=asyncio.FIRST_COMPLETED)
            arrived.cancel()
            assert counter.count == 0, "a STUN request reached 127.0.0.1"
            assert gathering.result()["data"]["result"] == "gathered", gathering.result()
    finally:
        transport.close()


REGISTER = """!navigator.serviceWorker ? 'refused' : navigator.serviceWorker.register('/sw.js')
  .then(r => !r ? 'refused' : new Promise(done => {
    const worker = r.installing || r.waiting || r.active;
    if (worker.state === 'activated') return done('running');
    worker.onstatechange = () => worker.state === 'activated' && done('running');
  }), e => 'refused')"""


async def test_service_workers_are_off(call, site_url):
    """A service worker's requests would pass the routes: no page may start one."""
    assert (await call(f"open {site_url}/index.html"))["success"]
    registered = await call({"tool": "eval", "params": {"script": REGISTER}})
    assert registered["success"] and registered["data"]["result"] == "refused", registered
