"""Rendering the tree: the default view, the interactive one, and their options."""

from nostr_browserd.browser.snapshot.printer import Options
from nostr_browserd.browser.snapshot.take import render

from .samples import RAW, REFS


def test_default_view_keeps_actionable_refs_and_drops_noise():
    text = render(RAW, Options()).text
    assert text == (
        '- navigation "Site" @e2:\n'
        '  - link "Home" @e5\n'
        "  - link @e7: abs()\n"
        "- main @e9:\n"
        '  - heading "Title" [level=1] @e10\n'
        "  - paragraph: Some words here and more words that go on for a long while, "
        "longer than the…\n"
        '  - textbox "Name" @e13: Ada\n'
        '  - textbox "Password" @e14: hunter2\n'
        "  - generic @e15: Clickable"
    )


def test_interactive_is_one_line_per_actionable_element():
    text = render(RAW, Options(interactive=True)).text
    assert REFS.findall(text) == ["e5", "e7", "e13", "e14", "e15"]
    assert "heading" not in text and "  -" not in text


DESCRIBED = """\
- generic [ref=e1]:
  - listbox "Available groups Choose groups by selecting them below" [ref=e2]
  - paragraph [ref=e3]: Choose groups by selecting them below
  - paragraph [ref=e4]: by selecting them below, as you like
  - paragraph [ref=e5]: selecting them below
  - textbox "by selecting them below, as you like" [ref=e6]
"""


def test_interactive_cuts_the_longest_description_a_name_ends_with():
    # Both prose lines end the listbox's name; the label is what is left of the longer.
    # A name that is all description keeps it: nothing else would tell it apart.
    text = render(DESCRIBED, Options(interactive=True)).text
    assert '- listbox "Available groups" @e2' in text
    assert '- textbox "by selecting them below, as you like" @e6' in text


def test_full_structure_and_urls_on_request():
    text = render(RAW, Options(compact=False, urls=True, text_limit=0)).text
    assert "    - listitem:" in text and "/url: /abs.html" in text
    assert "longer than the limit of the view" in text


def test_depth_and_scope():
    assert render(RAW, Options(depth=1)).text.splitlines() == [
        '- navigation "Site" @e2',
        "- main @e9",
    ]
    scoped = render(RAW, Options(), scopes=["e2"]).text
    assert "main" not in scoped and 'link "Home" @e5' in scoped
