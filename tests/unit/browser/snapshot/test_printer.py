"""Rendering the tree: the default view, the interactive one, and their options."""

from nostr_browserd.browser.snapshot.printer import Options
from nostr_browserd.browser.snapshot.take import render

from .samples import RAW, REFS


def test_default_view_keeps_actionable_refs_and_drops_noise():
    text = render(RAW, Options()).text
    assert text == (
        '- navigation "Site" [ref=e2]:\n'
        '  - link "Home" [ref=e5]\n'
        "  - link [ref=e7]: abs()\n"
        "- main [ref=e9]:\n"
        '  - heading "Title" [level=1] [ref=e10]\n'
        "  - paragraph: Some words here and more words that go on for a long while, "
        "longer than the…\n"
        '  - textbox "Name" [ref=e13]: Ada\n'
        '  - textbox "Password" [ref=e14]: hunter2\n'
        "  - generic [ref=e15]: Clickable"
    )


def test_interactive_is_one_line_per_actionable_element():
    text = render(RAW, Options(interactive=True)).text
    assert REFS.findall(text) == ["e5", "e7", "e13", "e14", "e15"]
    assert "heading" not in text and "  -" not in text


def test_full_structure_and_urls_on_request():
    text = render(RAW, Options(compact=False, urls=True, text_limit=0)).text
    assert "    - listitem:" in text and "/url: /abs.html" in text
    assert "longer than the limit of the view" in text


def test_depth_and_scope():
    assert render(RAW, Options(depth=1)).text.splitlines() == [
        '- navigation "Site" [ref=e2]',
        "- main [ref=e9]",
    ]
    scoped = render(RAW, Options(), scopes=["e2"]).text
    assert "main" not in scoped and 'link "Home" [ref=e5]' in scoped
