"""The inbox's checks with real crypto and a real SQLite store (no relay needed)."""

import asyncio
import time

import pytest

from nostr_browserd.daemon.store import SqliteStore
from nostr_browserd.dm.inbox import BACKLOG_SIZE, OPENING_AT_ONCE, Inbox, StrangerBudget
from nostr_browserd.errors import ErrorCode
from nostr_browserd.nostr import nip04, nip17
from nostr_browserd.nostr.nip01 import finalize_event, now
from nostr_browserd.nostr.nip59 import GIFT_WRAP_KIND, make_rumor, wrap
from nostr_browserd.nostr.signer import KeySigner
from tests.fixtures.daemon import forged_wrap, tampered


@pytest.fixture
async def parties(tmp_path):
    daemon, controller, stranger = KeySigner.generate(), KeySigner.generate(), KeySigner.generate()
    inbox, store = counting_inbox(tmp_path, daemon, controller)
    yield inbox, daemon, controller, stranger
    await store.close()


async def dm(sender, recipient, text, **kw):
    wraps = await nip17.make_dm(sender, [recipient], text, copy_to_self=False, **kw)
    return wraps[0][1]


def kind4(sender, recipient, text, created_at=None, tags=()):
    return finalize_event(
        {
            "kind": 4,
            "content": nip04.encrypt(sender.secret, recipient, text),
            "tags": [["p", recipient], *tags],
            "created_at": created_at or now(),
        },
        sender.secret,
    )


async def test_nip17_from_a_controller(parties):
    inbox, daemon, controller, _ = parties
    event = await dm(controller, daemon.pubkey, "get url")
    incoming = await inbox.open(event)
    assert incoming is not None and incoming.refusal is None
    assert (incoming.sender, incoming.scheme, incoming.content) == (
        controller.pubkey,
        "nip17",
        "get url",
    )
    assert incoming.outer_id == event["id"] and incoming.event_id != event["id"]


async def test_nip04_from_a_controller(parties):
    inbox, daemon, controller, _ = parties
    event = kind4(controller, daemon.pubkey, '{"tool":"get_url"}')
    incoming = await inbox.open(event)
    assert incoming.scheme == "nip04" and incoming.event_id == event["id"]
    assert incoming.content == '{"tool":"get_url"}'


async def test_strangers_forgeries_and_bad_signatures_are_dropped(parties):
    inbox, daemon, controller, stranger = parties
    assert await inbox.open(await dm(stranger, daemon.pubkey, "get url")) is None
    assert await inbox.open(kind4(stranger, daemon.pubkey, "get url")) is None
    # An allowed key's seal (past the allow-list) around a rumor that claims another key.
    colleague = KeySigner.generate()
    inbox.is_known = lambda pk: pk in (controller.pubkey, colleague.pubkey)
    forged = forged_wrap(colleague, controller.pubkey, daemon.pubkey, "get url")
    assert await inbox.open(forged) is None
    assert await inbox.open(tampered(kind4(controller, daemon.pubkey, "get url"))) is None
    # The control: the same inbox opens the controller's genuine messages of both kinds.
    assert (await inbox.open(await dm(controller, daemon.pubkey, "get url"))).refusal is None
    assert (await inbox.open(kind4(controller, daemon.pubkey, "get url"))).refusal is None


async def test_each_command_opens_once(parties):
    inbox, daemon, controller, _ = parties
    event = await dm(controller, daemon.pubkey, "get url")
    assert await inbox.open(event) is not None
    assert await inbox.open(event) is None
    # The same rumor in a new wrap (what a relay replaying a copy or an attacker could send).
    opened = await nip17.open_dm(event, daemon)
    rewrapped = await wrap(opened.rumor, controller, daemon.pubkey)
    assert await inbox.open(rewrapped) is None
    k4 = kind4(controller, daemon.pubkey, "get url")
    assert await inbox.open(k4) is not None and await inbox.open(k4) is None


async def test_stale_future_and_expired_commands_are_refused(parties):
    inbox, daemon, controller, _ = parties
    old = make_rumor(controller.pubkey, 14, "get url", [["p", daemon.pubkey]], now() - 3600)
    incoming = await inbox.open(await wrap(old, controller, daemon.pubkey))
    assert incoming.refusal.code == ErrorCode.REFUSED and "freshness" in incoming.refusal.message
    future = kind4(controller, daemon.pubkey, "get url", created_at=now() + 3600)
    assert (await inbox.open(future)).refusal.code == ErrorCode.REFUSED
    expired = await dm(controller, daemon.pubkey, "get url", expiration=int(time.time()) - 1)
    assert "expired" in (await inbox.open(expired)).refusal.message


async def test_group_messages_are_answered_to_the_sender_alone(parties):
    inbox, daemon, controller, stranger = parties
    wraps = await nip17.make_dm(controller, [daemon.pubkey, stranger.pubkey], "click @e1")
    ours = next(w for r, w in wraps if r == daemon.pubkey)
    incoming = await inbox.open(ours)
    assert incoming.sender == controller.pubkey
    assert incoming.refusal.code == ErrorCode.REFUSED and "one-to-one" in incoming.refusal.message


async def test_other_rumor_kinds_are_ignored(parties):
    inbox, daemon, controller, _ = parties
    reaction = await dm(controller, daemon.pubkey, "+", kind=7)
    assert await inbox.open(reaction) is None
    # and nothing in them was mistaken for a command once the kind is 14
    command = await inbox.open(await dm(controller, daemon.pubkey, "get url"))
    assert command.content == "get url" and command.file_tags is None


async def test_a_file_message_comes_through_with_its_tags(parties):
    inbox, daemon, controller, stranger = parties
    url, tags = "https://files.example/a.png", [["file-type", "image/png"], ["x", "ab"]]
    file_message = await dm(controller, daemon.pubkey, url, kind=15, tags=tags)
    incoming = await inbox.open(file_message)
    assert incoming.content == url and incoming.refusal is None
    assert ("file-type", "image/png") in incoming.file_tags and ("x", "ab") in incoming.file_tags
    # A stranger's is dropped before its seal is opened, like any message of theirs.
    assert await inbox.open(await dm(stranger, daemon.pubkey, url, kind=15, tags=tags)) is None


async def test_schemes_not_accepted_and_not_for_us(tmp_path):
    daemon, controller, other = KeySigner.generate(), KeySigner.generate(), KeySigner.generate()
    store = SqliteStore(tmp_path / "s.sqlite3")
    inbox = Inbox(
        daemon,
        daemon.pubkey,
        store,
        is_known=lambda pk: True,
        schemes=["nip17"],
        freshness=600,
    )
    assert await inbox.open(kind4(controller, daemon.pubkey, "get url")) is None
    assert await inbox.open(await dm(controller, other.pubkey, "get url")) is None
    # The control: the scheme it accepts, addressed to it, opens.
    assert (await inbox.open(await dm(controller, daemon.pubkey, "get url"))).refusal is None
    await store.close()


async def test_strangers_are_logged_but_not_without_limit(parties, caplog):
    inbox, daemon, controller, stranger = parties
    for _ in range(12):
        assert await inbox.open(await dm(stranger, daemon.pubkey, "get url")) is None
    unknown = [r for r in caplog.records if "unknown key" in r.getMessage()]
    assert len(unknown) == 5
    assert (await inbox.open(await dm(controller, daemon.pubkey, "get url"))).refusal is None


class CountingSigner(KeySigner):
    """A local key that records every decryption it is asked for: (method, peer pubkey)."""

    def __init__(self, secret: bytes) -> None:
        super().__init__(secret)
        self.calls: list[tuple[str, str]] = []

    async def nip44_decrypt(self, pubkey: str, ciphertext: str) -> str:
        self.calls.append(("nip44_decrypt", pubkey))
        return await super().nip44_decrypt(pubkey, ciphertext)

    async def nip04_decrypt(self, pubkey: str, ciphertext: str) -> str:
        self.calls.append(("nip04_decrypt", pubkey))
        return await super().nip04_decrypt(pubkey, ciphertext)


def counting_inbox(tmp_path, daemon, controller, **kw):
    """An inbox for ``daemon`` that knows ``controller`` alone, on a state store in ``tmp_path``."""
    store = SqliteStore(tmp_path / "state.sqlite3")
    inbox = Inbox(
        daemon,
        daemon.pubkey,
        store,
        is_known=lambda pk: pk == controller.pubkey,
        schemes=["nip17", "nip04"],
        freshness=600,
        **kw,
    )
    return inbox, store


async def test_a_strangers_wrap_costs_one_decryption_once_even_across_restarts(tmp_path):
    daemon = CountingSigner(KeySigner.generate().secret)
    controller, stranger = KeySigner.generate(), KeySigner.generate()
    inbox, store = counting_inbox(tmp_path, daemon, controller)
    wraps = [await dm(stranger, daemon.pubkey, f"get url {i}") for i in range(5)]
    for event in wraps:
        assert await inbox.open(event) is None
    assert len(daemon.calls) == 5, "the wrap only: a stranger's seal is never decrypted"
    assert stranger.pubkey not in {peer for _, peer in daemon.calls}
    assert await inbox.open(kind4(stranger, daemon.pubkey, "get url")) is None
    assert len(daemon.calls) == 5, "a stranger's kind 4 is not decrypted at all"
    await store.close()
    inbox, store = counting_inbox(tmp_path, daemon, controller)  # a restart: relays re-deliver
    for event in [*wraps, *wraps]:  # each through two relays
        inbox.take(event)
    assert len(inbox._arrivals) == 5, "a copy of what waits already is dropped as it comes"
    await inbox.sort()
    assert not inbox._wraps and not inbox._arrivals, "remembered as rejected: never queued"
    for event in wraps:
        assert await inbox.open(event) is None
    assert len(daemon.calls) == 5, "remembered as rejected: no decryption"
    assert (await store.counts())["rejected_ids"] == 5
    await store.close()


def unopened(recipient: str, n: int) -> dict:
    """Gift wrap number ``n`` as the backlog sees it: never opened there, only its id, kind
    and recipient are read (ten thousand real ones would cost a minute of crypto)."""
    return {
        "id": f"{n:064x}",
        "kind": GIFT_WRAP_KIND,
        "pubkey": "ab" * 32,
        "created_at": now(),
        "tags": [["p", recipient]],
        "content": "",
        "sig": "00" * 64,
    }


async def test_at_most_ten_thousand_wraps_wait_and_the_oldest_received_goes(parties):
    inbox, daemon, _, _ = parties
    assert inbox.backlog_size == BACKLOG_SIZE == 10_000
    flood = [unopened(daemon.pubkey, n) for n in range(BACKLOG_SIZE + 2)]
    for event in flood[:-1]:
        inbox.take(event)
    arrived = [event for event, _ in inbox._arrivals]
    assert arrived == flood[1:-1], "arrived, not yet sorted: the oldest went"
    await inbox.sort()
    inbox.take(flood[-1])
    await inbox.sort()
    assert list(inbox._wraps) == flood[2:], "waiting to be opened: the oldest went"
    assert inbox.status()["wraps_waiting"] == BACKLOG_SIZE
    assert len(inbox._queued) == BACKLOG_SIZE, "nor are the dropped ones' ids kept"
    inbox.take(flood[0])  # not remembered: a relay's copy (or a restart's) is taken again
    assert inbox._arrivals[-1][0] is flood[0]


async def test_a_controller_is_served_behind_a_flood_and_strangers_stay_in_budget(tmp_path):
    daemon = CountingSigner(KeySigner.generate().secret)
    controller, stranger = KeySigner.generate(), KeySigner.generate()
    inbox, store = counting_inbox(tmp_path, daemon, controller)
    inbox.budget = StrangerBudget(per_minute=600, burst=5)
    flood = [await dm(stranger, daemon.pubkey, f"x{i}") for i in range(60)]
    first = await dm(controller, daemon.pubkey, "get url")
    for event in [first, *flood]:
        inbox.take(event)
    command = await dm(controller, daemon.pubkey, "get title")
    inbox.take(command)
    submitted: list = []
    done = asyncio.Event()

    def submit(incoming):
        submitted.append(incoming.content)
        if len(submitted) == 2:
            done.set()

    started = time.monotonic()
    serving = asyncio.create_task(inbox.serve(submit))
    try:
        async with asyncio.timeout(30):
            await done.wait()
    finally:
        serving.cancel()
    elapsed = time.monotonic() - started
    assert submitted == ["get url", "get title"], "the newest command did not wait for the flood"
    strangers = inbox.budget.spent
    # the burst, plus what the budget refilled (10 a second) while the test ran
    assert strangers <= 5 + elapsed * 10 + 1
    # what was taken but still being opened when the test stopped is neither spent nor waiting
    taken = len(flood) - len(inbox._wraps)
    assert strangers <= taken <= strangers + OPENING_AT_ONCE and taken < len(flood)
    assert inbox.status() == {
        "stranger_budget_per_minute": 600,
        "stranger_decryptions": strangers,
        "wraps_waiting": len(inbox._wraps),
        "checked_in_store": 62,  # each of them, at once, before anything was opened
        "wraps_opened": inbox.wraps_opened,
        "seals_opened": 2,  # the two commands' (a stranger's seal never)
        "bad_signatures": 0,
    }
    # one call per stranger's wrap (their seals never), two per command
    assert strangers + 4 <= len(daemon.calls) <= taken + 4
    assert stranger.pubkey not in {peer for _, peer in daemon.calls}
    await store.close()


class SlowGate:
    """A gate for a controller whose commands another worker runs: it keeps every wrap aside
    at once (``keep_now``) unless it is asking the store, and ``admit`` asks (it waits for
    ``answer``); what it kept or admitted, in order, is in ``seen``."""

    def __init__(self) -> None:
        self.asking, self.answer, self.entered = True, asyncio.Event(), asyncio.Event()
        self.seen: list[str] = []

    def opens(self, sender):
        return False

    def shared(self):
        return True

    def keep_now(self, incoming, proceed):
        if self.asking:
            return False
        self.seen.append(incoming.outer_id)
        return True

    async def admit(self, incoming, proceed):
        self.entered.set()
        await self.answer.wait()
        self.seen.append(incoming.outer_id)
        return False

    def keep(self, incoming, proceed):
        raise AssertionError("nothing is claimed here")


async def test_a_wrap_kept_aside_as_it_arrives_stays_behind_its_senders_earlier_one(tmp_path):
    """A live wrap decrypted in the subscription's sink and kept aside there does not overtake
    an earlier wrap of its sender that waits for the gate: it goes through the queue too."""
    daemon, controller = KeySigner.generate(), KeySigner.generate()
    gate = SlowGate()
    inbox, store = counting_inbox(tmp_path, daemon, controller, gate=gate)
    first, second, third = [await dm(controller, daemon.pubkey, f"get url {i}") for i in range(3)]
    serving = asyncio.create_task(inbox.serve(lambda incoming: None))
    try:
        await asyncio.sleep(0)
        inbox.take(first, stored=False)  # the gate must ask: it goes through the queue
        await gate.entered.wait()
        gate.asking = False  # the gate could keep the next one at once...
        inbox.take(second, stored=False)  # ...but its sender's first is not past the gate
        gate.answer.set()
        async with asyncio.timeout(10):
            while len(gate.seen) < 2:
                await asyncio.sleep(0.01)
        inbox.take(third, stored=False)  # nothing before it now: kept as it arrives
        assert gate.seen == [first["id"], second["id"], third["id"]]
        assert inbox.status()["wraps_opened"] == 3, "each decrypted once"
    finally:
        serving.cancel()
        await store.close()
