"""A daemon on two browser servers, over real DMs: placement, the policy there, a server killed.

Both servers are on loopback; ``egress_host`` makes their contexts use the egress proxy the
way servers on other machines do (its second listener, with the credential), and only that.
"""

from __future__ import annotations

import asyncio
import json
import urllib.parse

from nostr_browserd.browser.config import BrowserConfig
from tests.fixtures.browser import POLLING, until_polling
from tests.fixtures.daemon import (
    SdkController,
    daemon_pubkey,
    start_daemon_fixture,  # noqa: F401
    wait_until,
)
from tests.fixtures.leaks import LEAKS


async def test_a_killed_browser_server_moves_its_controllers(
    nostr_relay_url, start_daemon, browser_servers, site_url, echo_url
):
    first = await browser_servers("launch-server")
    second = await browser_servers("run-server")
    LEAKS.secret(urllib.parse.urlsplit(first.url).path, "launch-server's random path")
    hosts = [urllib.parse.urlsplit(u).netloc for u in (site_url, echo_url)]
    async with SdkController([nostr_relay_url]) as one, SdkController([nostr_relay_url]) as two:
        daemon = await start_daemon(
            [nostr_relay_url],
            controllers=[one.npub, two.npub],
            browser={
                "endpoints": [first.url, second.url],
                "executable": BrowserConfig().find_executable(),
                "block_private_networks": None,  # the default: on for DM controllers
                "allowed_hosts": hosts,
                "egress_host": "127.0.0.1",
                "contexts_per_endpoint": 4,
            },
        )
        me = await daemon_pubkey(daemon)
        # Only the listener on egress_host serves the servers' contexts: the loopback ports,
        # for this machine's own fetches, point nowhere (a context using one would fail).
        assert daemon.browser.egress is not None and daemon.browser.egress.remote_url

        async def nowhere(owner: str) -> str:
            return "http://127.0.0.1:9"

        daemon.browser.egress.url_for = nowhere  # type: ignore[method-assign]

        async def command(phone, tool, **params):
            return await phone.command(me, {"tool": tool, "params": params})

        for phone in (one, two):
            assert (await command(phone, "open", url=f"{site_url}/index.html"))["success"]
        placed = {s.owner: s.endpoint for s in daemon.browser.sessions()}
        assert placed == dict(zip((one.pubkey, two.pubkey), daemon.browser.endpoints, strict=True))
        # The policy on a browser server: a redirect hop to a private address goes to the
        # egress proxy (with its credential), which refuses it.
        private = urllib.parse.quote("http://10.255.255.1/secret", safe="")
        bounced = await command(one, "open", url=f"{echo_url}/redirect?to={private}")
        assert bounced["data"]["status"] == 403, bounced
        text = await command(one, "get_text")
        assert "10.255.255.1 is a private address" in text["data"]["text"], text

        victim = daemon.browser.existing(one.pubkey)
        running = asyncio.create_task(command(one, "wait_for_fn", script=POLLING))
        await until_polling(victim.page)
        first.kill()
        hit = await asyncio.wait_for(running, 30)
        assert hit["error"]["code"] == "BROWSER_CRASHED", hit
        again = await command(one, "open", url=f"{site_url}/form.html")
        assert again["success"] and again["data"]["title"] == "Form", again
        assert (await command(two, "get_title"))["success"]

        await wait_until(lambda: daemon.browser.status()[0]["state"] != "up")
        status = (await daemon.status())["endpoints"]
        LEAKS.output(json.dumps(status), "the endpoints' status")
        assert [e["contexts"] for e in status] == [0, 2]
        assert [e["limit"] for e in status] == [4, 4]
        assert status[1]["estimated_mb"] == 34.0
        assert status[0]["url"] == f"ws://{urllib.parse.urlsplit(first.url).netloc}/…"
        assert status[1]["network_policy"] == "egress proxy"
