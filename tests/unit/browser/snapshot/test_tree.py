"""Building the tree: quoted keys parsed, and password values masked in it."""

from nostr_browserd.browser.snapshot.printer import Options
from nostr_browserd.browser.snapshot.take import render

from .samples import QUOTED_RAW, RAW, REFS


def test_password_values_are_masked():
    text = render(RAW, Options(), secrets={"hunter2"}).text
    assert "hunter2" not in text
    assert 'textbox "Password" [ref=e14]: ••••••••' in text


def test_quoted_lines_keep_their_refs():
    actionable = ["e3", "e4", "e8", "e10", "e12", "e14", "e17", "e18", "e29", "e31", "e37", "e39"]
    interactive = render(QUOTED_RAW, Options(interactive=True)).text
    assert REFS.findall(interactive) == actionable
    assert interactive.splitlines()[:2] == [
        '- button "Toggle theme (current theme: auto)" [ref=e3]',
        '- link "Read: the manual" [ref=e4]',
    ]
    assert '- button "it\'s \\"quoted\\": yes" [ref=e8]' in interactive
    assert '- combobox "Colour: pick" [ref=e37]: red: warm' in interactive
    tree = render(QUOTED_RAW, Options()).text
    assert set(REFS.findall(tree)) == {"e2", "e6", "e7", *actionable}
    assert '  - heading "Names: quoted" [level=1] [ref=e7]' in tree


def test_quoted_password_value_is_masked():
    text = render(QUOTED_RAW, Options(), secrets={"hunter2: secret"}).text
    assert "hunter2" not in text
    assert 'textbox "Password: 8 or more" [ref=e31]: ••••••••' in text
