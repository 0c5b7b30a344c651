"""ask's pure pieces: the consent rule (given the judgement), the offered tools, progress
coalescing, trimming."""

from __future__ import annotations

import asyncio

import pytest

from nostr_browserd.agent.loop import trim
from nostr_browserd.agent.progress import Progress
from nostr_browserd.agent.tools import DEFAULT_TOOLS, tool_specs, unknown_tools
from nostr_browserd.catalog import REGISTRY
from nostr_browserd.daemon.consent import needs_consent, reads_like_commit


def test_free_tools_never_ask_and_gated_ones_ask_unless_auto_approved():
    assert not needs_consent("snapshot", False, False, False, [])
    assert needs_consent("click", True, False, False, [])
    assert not needs_consent("click", True, False, False, ["click"])


def test_a_commit_always_asks_whatever_auto_approve_says():
    for name in ("Submit", "Pay now", "Place order", "Checkout", "Send", "Confirm", "Delete"):
        assert reads_like_commit(f"{name}"), name
    # However the page writes it: a zero-width space inside, a no-break space, full width.
    for styled in ("Pla\u200bce\u00a0order", "\uff30\uff41\uff59 now", "CHECK  OUT"):
        assert reads_like_commit(styled), styled
    assert not reads_like_commit("Paypal") and not reads_like_commit("Sender address")
    assert needs_consent("click", True, False, True, ["click"])
    # A batch or a find that acts runs other tools: auto_approve never covers it.
    assert needs_consent("find_text", True, True, False, ["find_text", "click"])


def test_the_default_set_is_about_twenty_registered_tools_without_ask():
    assert 15 <= len(DEFAULT_TOOLS) <= 25 and unknown_tools(REGISTRY, DEFAULT_TOOLS) == []
    specs = tool_specs(REGISTRY, [*DEFAULT_TOOLS, "ask"])
    assert [s.name for s in specs] == list(DEFAULT_TOOLS)
    assert unknown_tools(REGISTRY, ["ask", "login", "nope", "click"]) == ["ask", "login", "nope"]
    click = next(s for s in specs if s.name == "click")
    assert click.schema["type"] == "object" and "ref" in click.schema["properties"]


async def test_progress_sends_the_first_at_once_then_coalesces():
    sent: list[str] = []
    arrived = asyncio.Event()

    async def send(text: str) -> None:
        sent.append(text)
        arrived.set()

    progress = Progress(send, interval=3600)
    progress.note("reading the page")
    await asyncio.wait_for(arrived.wait(), 10)
    assert sent == ["… reading the page"]
    for i in range(100):
        progress.note(f"step {i}")
        progress.text("delta ")
    # The loop runs ready tasks in order: once a task made now has run, the sender made by
    # the first note above has had its turn, and sent or gone to sleep for the interval.
    await asyncio.create_task(asyncio.sleep(0))
    assert len(sent) == 1  # the rest waits for the interval, then goes as one message
    await progress.close()
    assert len(sent) == 1  # what was pending at the end is dropped: the reply carries it

    quick = Progress(send, interval=0)
    sent.clear()
    arrived.clear()
    quick.note("a")
    quick.text("b")
    quick.text("c")
    await asyncio.wait_for(arrived.wait(), 10)
    await quick.close()
    assert sent == ["… a\nbc"]


def test_trim_cuts_only_before_a_task():
    exchange = [
        {"role": "user", "text": "x" * 100},
        {"role": "assistant", "text": "", "calls": [{"id": "1", "name": "snapshot", "args": {}}]},
        {"role": "tool", "id": "1", "name": "snapshot", "content": "y" * 100},
        {"role": "assistant", "text": "done", "calls": []},
    ]
    transcript = exchange * 5
    kept = trim(transcript, 1000)
    assert kept[0]["role"] == "user" and len(kept) % 4 == 0 and len(kept) < len(transcript)
    assert trim(exchange, 10) == exchange  # one exchange is never cut inside


def test_the_daemon_refuses_to_start_with_tools_ask_cannot_offer(tmp_path):
    from nostr_browserd.daemon.ask import check_ask_config
    from nostr_browserd.daemon.config import Config, ConfigError

    state = {"state": {"dir": str(tmp_path)}}
    check_ask_config(Config.model_validate({**state, "ask": {"tools": ["click"]}}), REGISTRY)
    for bad in (
        {"ask": {"tools": ["snapshot", "login"]}},
        {"ask": {"tools": ["ask"]}},
        {"controllers": [{"pubkey": "a" * 63 + "1", "ask": {"auto_approve": ["clik"]}}]},
    ):
        with pytest.raises(ConfigError):
            check_ask_config(
                Config.model_validate({"state": {"dir": str(tmp_path)}, **bad}), REGISTRY
            )


def test_a_vault_fill_always_asks_whatever_auto_approve_says():
    assert needs_consent("fill_credential", True, False, False, ["fill_credential"])
