"""The scale-out harness itself (tests/fixtures/cluster.py): two workers, one identity, one
database, two relays; a command reaches both workers through both relays and runs once.
Then one worker is killed (``kill -9``), the other still answers, and SIGTERM stops it."""

import pytest

pytestmark = pytest.mark.timeout(300)


async def test_two_workers_answer_a_command_exactly_once(cluster, click_counter):
    alice, bob, carol = await cluster.controllers(3)
    first, second = await cluster.start_many(2)
    page = {"tool": "open", "params": {"url": click_counter.page("alice")}}
    click = {"tool": "click", "params": {"selector": "#click"}}
    # one command, self-contained: whichever worker claims it opens the page and clicks
    batch = {"id": "smoke-batch", "tool": "batch", "params": {"commands": [page, click]}}
    answer = await alice.command(cluster.pubkey, batch, timeout=60)
    assert answer["success"] and answer["data"]["ok"], answer
    status = await bob.command(cluster.pubkey, {"tool": "get_url"}, timeout=60)
    assert status["success"], status

    assert click_counter.loads["alice"] == 1 and click_counter.clicks["alice"] == 1
    assert await alice.duplicates() == {} and await bob.duplicates() == {}
    assert [len(a) for a in (await alice.answers()).values()] == [1]
    ran = [w.log.read_text().count("command smoke-batch from") for w in (first, second)]
    assert sorted(ran) == [0, 1], ran
    served = [first.status(), second.status()]  # both serve the one identity
    assert all(s is not None and s["identity"]["npub"] for s in served), served

    # kill -9: one worker is gone at once; a controller new to both is served by the other
    first.kill()
    assert not first.alive
    after = await carol.command(cluster.pubkey, {"id": "after-kill", "tool": "get_url"}, timeout=60)
    assert after["success"], after
    assert "command after-kill from" in second.log.read_text()
    assert second.terminate() == 0 and "stopped" in second.tail()
