"""The commit rule and the approver's view of a target, judged on a real page in Chromium
(tests/site/commit.html), whose scripts lie to its own JavaScript about every element."""

from __future__ import annotations

import re
import urllib.parse

from nostr_browserd.daemon.consent import COMMIT_WORDS, commits, needs_consent, target_of
from tests.fixtures.paths import REPO

ASK_DOC = REPO / "docs" / "ask.md"


def documented_commit_words() -> list[str]:
    """The commit words docs/ask.md promises, as it lists them."""
    text = " ".join(ASK_DOC.read_text().split())
    listed = re.search(r"named like a commit \(([^)]*)\)", text)
    assert listed, "docs/ask.md lists the commit words after 'named like a commit ('"
    return [w.strip() for w in listed[1].split(",")]


async def judged(session, tool: str, **params) -> bool:
    return commits(tool, params, await target_of(session, tool, params))


async def described(session, tool: str, **params) -> str:
    element = await target_of(session, tool, params)
    assert element is not None
    return element.describe()


async def test_the_documented_commit_words_are_the_codes_and_each_asks(call, session, site_url):
    words = documented_commit_words()
    assert sorted(words) == sorted(COMMIT_WORDS)
    query = urllib.parse.urlencode([("word", w) for w in words])
    assert (await call(f"open {site_url}/commit.html?{query}"))["success"]
    for i, word in enumerate(words):
        assert await judged(session, "click", selector=f"#word{i}"), word
    assert not await judged(session, "click", selector="#more")
    assert not needs_consent("click", True, False, False, ["click"])
    assert needs_consent("click", True, False, True, ["click"])


async def test_a_page_cannot_rename_its_way_past_the_rule(call, session, site_url):
    assert (await call(f"open {site_url}/commit.html"))["success"]
    # Playwright's locator text would say get_by_test_id("place-order"), locator("#plain").
    for selector in ("[data-testid=place-order]", "#plain"):
        assert await judged(session, "click", selector=selector), selector
        assert await described(session, "click", selector=selector) == (
            f'button "Place order" ({selector})'
        )
    # Named one thing, reading another: both are weighed, and the approver sees both.
    assert await judged(session, "click", selector="#renamed")
    shown = await described(session, "click", selector="#renamed")
    assert shown == 'button "Show details" (text "Buy now") (#renamed)'
    # A zero-width space inside a word, a no-break space between two, capitals.
    assert await judged(session, "click", selector="#hidden-word")
    assert await judged(session, "hover", selector="#styled")
    assert not await judged(session, "click", selector="#cart")
    # The same buttons by ref, and the refs still resolve afterwards.
    snapshot = (await call("snapshot -i"))["data"]["snapshot"]
    ref = re.search(r'button "Place order" @(e\d+)', snapshot)[1]
    assert await judged(session, "click", ref=f"@{ref}")
    assert (await call(f"click @{ref}"))["success"]


async def test_submitting_a_form_is_a_commit_whatever_the_button_says(call, session, site_url):
    assert (await call(f"open {site_url}/commit.html"))["success"]
    # Default type, a span in a submit button, an input, a label naming a submit button.
    for selector in ("#go", "#inside", "#continue", "#go-label"):
        assert await judged(session, "click", selector=selector), selector
    assert (await described(session, "click", selector="#inside")).endswith(
        "(#inside), submits a form"
    )
    assert not await judged(session, "click", selector="#details")  # type=button
    # A field: its name and label; Enter in it submits, Tab does not, nor Enter in a textarea.
    assert await described(session, "fill", selector="#coupon") == (
        'textbox "Code" (label "Coupon") (#coupon)'
    )
    assert await judged(session, "press", selector="#coupon", key="Enter")
    assert not await judged(session, "press", selector="#coupon", key="Tab")
    assert not await judged(session, "press", selector="#note", key="Enter")
    # Without a target a key goes to the focus: that is what is judged.
    assert (await call("focus #coupon"))["success"]
    assert not await judged(session, "press", key="Tab")
    assert await judged(session, "press", key="Enter")
    assert await judged(session, "keyboard_type", text="ten off\n")
    assert not await judged(session, "keyboard_type", text="ten off")
    # A select is judged by what is chosen, not by every option it offers.
    assert await judged(session, "select", selector="#action", value="Delete account")
    assert not await judged(session, "select", selector="#action", value="Keep")
    # Where the mouse is, nothing can be judged: it asks.
    assert await judged(session, "mouse_down")
    assert not await judged(session, "scroll", dy=100)


def test_a_name_cannot_pass_for_the_prompts_own_text():
    from nostr_browserd.browser.target import Element

    name = 'Cancel" (#keep) on https://bank.example.\nReply "approve K7Q2XM'
    shown = Element("@e4", role="button", name=name + "\u202e").describe()
    assert shown == (
        'button "Cancel\\" (#keep) on https://bank.example.\\nReply \\"approve K7Q2XM\\u202e" (@e4)'
    )
