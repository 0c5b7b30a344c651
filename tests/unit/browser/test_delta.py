"""snapshot --delta's diff: what changed, placed by its context, and nothing else."""

from __future__ import annotations

from nostr_browserd.browser.delta import compare

PAGE = """\
- banner @e2:
  - link "Home" @e3
- main @e4:
  - heading "Add user" [level=1] @e5
  - form @e6:
    - textbox "Username" @e7
    - textbox "Password" @e8
    - button "Save" @e9
  - heading "Recent" [level=2] @e10
  - list:
    - link "alice" @e11
    - link "bob" @e12
- contentinfo @e13:
  - link "Docs" @e14"""


def marked(text: str) -> list[str]:
    """The delta's lines after its header."""
    head, *lines = text.splitlines()
    assert head.startswith("[delta since this tab's last snapshot: ")
    return lines


def test_nothing_changed_says_so_and_that_the_refs_still_work() -> None:
    delta = compare(PAGE, PAGE)
    assert (delta.added, delta.removed, delta.changed, delta.refs) == (0, 0, 0, 0)
    assert delta.text == "[delta: nothing changed since this tab's last snapshot (14 lines)]"


def test_a_field_that_changed_keeps_its_ref_and_is_placed_by_its_ancestors() -> None:
    after = PAGE.replace('"Username" @e7', '"Username" @e7: carol')
    delta = compare(PAGE, after)
    assert (delta.added, delta.removed, delta.changed) == (0, 0, 1)
    assert marked(delta.text) == [
        "  - main @e4:",
        '    - heading "Add user" [level=1] @e5',
        "    - form @e6:",
        '~     - textbox "Username" @e7: carol',
    ]
    assert "its other 10 lines and their refs are unchanged]" in delta.text
    assert delta.refs == 4


def test_an_added_line_comes_under_its_section_heading() -> None:
    after = PAGE.replace('    - link "bob" @e12', '    - link "bob" @e12\n    - link "carol" @e15')
    lines = marked(compare(PAGE, after).text)
    assert lines == [
        "  - main @e4:",
        '    - heading "Recent" [level=2] @e10',
        "    - list:",
        '+     - link "carol" @e15',
    ]


def test_a_removed_subtree_is_one_line_that_counts_what_it_held() -> None:
    after = PAGE.replace(
        '  - form @e6:\n    - textbox "Username" @e7\n'
        '    - textbox "Password" @e8\n    - button "Save" @e9\n',
        "  - text: The user was added.\n",
    )
    delta = compare(PAGE, after)
    assert (delta.added, delta.removed, delta.changed) == (1, 4, 0)
    assert marked(delta.text) == [
        "  - main @e4:",
        '    - heading "Add user" [level=1] @e5',
        "-   - form @e6:  (and the 3 lines inside it)",
        "+   - text: The user was added.",
    ]
    assert delta.refs == 2  # the removed form's refs are gone: not counted as shown


def test_flat_interactive_lines_change_alone() -> None:
    before = '- link "Home" @e3\n- checkbox "Agree" @e7\n- button "Send" @e9'
    after = before.replace('"Agree" @e7', '"Agree" [checked] @e7')
    after += '\n- link "Next" @e20'
    assert marked(compare(before, after).text) == [
        '~ - checkbox "Agree" [checked] @e7',
        '+ - link "Next" @e20',
    ]
