"""End to end: a monitor on two workers sharing an identity and a PostgreSQL store.  A change
is said once, by the worker serving the controller; when that worker stops, the other takes
the controller over and its monitor with it (baseline and state in the store)."""

from __future__ import annotations

import asyncio

from nostr_browserd.daemon.keyfile import write_new_key
from tests.e2e.test_monitors import FAST, about, arrived, checked_more, shop  # noqa: F401
from tests.fixtures.daemon import (
    SdkController,
    daemon_pubkey,
    start_daemon_fixture,  # noqa: F401
)
from tests.fixtures.postgres import fresh_database


async def checkers_of(daemon, owner: str, checks: int) -> set[str]:
    """The workers that ran the next ``checks`` checks of ``owner``'s m1, as the store said
    after each (polled far more often than a check runs)."""
    seen: dict[int, str] = {}
    start = None
    async with asyncio.timeout(60):
        while True:
            kept = await daemon.store.watch("monitor", owner, "m1")
            number = kept.state.get("checks", 0)
            start = number if start is None else start
            if number > start:
                seen[number] = kept.state["worker"]
            if len(seen) >= checks and number >= start + checks:
                return set(seen.values())
            await asyncio.sleep(0.02)


async def test_one_message_per_change_and_the_monitor_follows_its_controller(
    nostr_relay_url,
    start_daemon,
    shop,  # noqa: F811
    postgres_dsn,
    tmp_path,
):
    page, url = shop
    key = tmp_path / "identity.nsec"
    write_new_key(key)
    database = fresh_database(postgres_dsn)
    async with SdkController([nostr_relay_url]) as phone:
        workers = []
        for name in ("w1", "w2"):
            workers.append(
                await start_daemon(
                    [nostr_relay_url],
                    controllers=[phone.npub],
                    state_dir=tmp_path / name,
                    state={"database": database, "worker": name, "lease": 5},
                    identity={"method": "local", "nsec_file": str(key)},
                    monitors=FAST,
                )
            )
        me = await daemon_pubkey(workers[0])
        made = await phone.command(
            me, {"tool": "monitor_add", "params": {"url": url, "every": "1s"}}
        )
        assert made["success"], made
        await checked_more(workers[0], phone.pubkey, 2)
        # Every check runs on one worker, the one holding the controller's lease.
        checkers = await checkers_of(workers[0], phone.pubkey, 6)
        leases = {lease.controller: lease.worker for lease in await workers[0].store.leases()}
        assert checkers == {leases[phone.pubkey]}, checkers
        with page.lock:
            page.body = page.body.replace("Price 10 €", "Price 12 €")
        await arrived(phone, about(me, "m1"))
        await checked_more(workers[0], phone.pubkey, 3)
        await phone.poll()
        told = [r for r in phone.received if about(me, "m1")(r)]
        assert len(told) == 1, "one message per change, from one worker"

        (serving,) = checkers
        holder = next(w for w in workers if w.config.state.worker == serving)
        other = next(w for w in workers if w is not holder)
        await holder.stop()  # drains: its lease is released at once
        with page.lock:
            page.body = page.body.replace("Price 12 €", "Price 14 €")
        (_, moved) = await arrived(phone, about(me, "m1"), 2)
        assert moved.json["diff"] == "-Price 12 €\n+Price 14 €"
        assert await checkers_of(other, phone.pubkey, 3) == {other.config.state.worker}
