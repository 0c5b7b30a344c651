"""A site's header and navigation, read once: left out of the next page's snapshot."""

from __future__ import annotations

from typing import Any, cast

from nostr_browserd.browser.refs import alias, resolve
from nostr_browserd.browser.snapshot.printer import Options
from nostr_browserd.browser.snapshot.take import SEEN_LINES, render

ADD = """\
- generic [ref=e1]:
  - link "Skip to content" [ref=e2] [cursor=pointer]
  - banner [ref=e3]:
    - link "Site" [ref=e4] [cursor=pointer]
    - button "Log out" [ref=e5]
  - navigation "Sidebar" [ref=e6]:
    - link "Users" [ref=e7] [cursor=pointer]
    - link "Groups" [ref=e8] [cursor=pointer]
  - main [ref=e9]:
    - textbox "Username" [ref=e10]
    - button "Save" [ref=e11]
"""

# The page Save opened: the same header and sidebar, other refs (Playwright's f1 prefix).
CHANGE = """\
- generic [ref=f1e1]:
  - link "Skip to content" [ref=f1e2] [cursor=pointer]
  - banner [ref=f1e3]:
    - link "Site" [ref=f1e4] [cursor=pointer]
    - button "Log out" [ref=f1e5]
  - navigation "Sidebar" [ref=f1e6]:
    - link "Users" [ref=f1e7] [cursor=pointer]
    - link "Groups" [ref=f1e8] [cursor=pointer]
  - main [ref=f1e9]:
    - checkbox "Staff" [ref=f1e10]
    - button "Save" [ref=f1e11]
"""

SITE = "http://admin.test"
OPTIONS = Options(interactive=True)
RUN = (
    '- (5 lines same as before, old refs working: banner, navigation "Sidebar"; '
    "snapshot --full shows them)"
)


def first(raw: str = ADD, origin: str = SITE) -> Any:
    return render(raw, OPTIONS, origin=origin).seen


def test_after_a_navigation_the_same_header_and_sidebar_print_as_one_line() -> None:
    page = render(CHANGE, OPTIONS, origin=SITE, before=first(), navigated=True)
    assert page.text.splitlines() == [RUN, '- checkbox "Staff" @f1e10', '- button "Save" @f1e11']
    assert page.refs == 2  # the refs shown, not the ones left out
    assert page.seen is not None and (page.seen.head, page.seen.tail) == (5, 0)
    assert page.seen.aliases == {f"e{n}": f"f1e{n}" for n in (2, 4, 5, 7, 8)}


def test_a_line_of_main_is_never_left_out_even_when_it_is_the_same() -> None:
    footer = '  - contentinfo [ref={p}e12]:\n    - link "Docs" [ref={p}e13] [cursor=pointer]\n'
    before = first(ADD + footer.format(p=""))
    same_main = CHANGE.replace('checkbox "Staff"', 'textbox "Username"') + footer.format(p="f1")
    page = render(same_main, OPTIONS, origin=SITE, before=before, navigated=True)
    assert page.text.splitlines() == [
        RUN,
        '- textbox "Username" @f1e10',
        '- button "Save" @f1e11',
        '- link "Docs" @f1e13',  # one line: as short a run prints as it is
    ]


def test_a_page_without_landmarks_prints_whole() -> None:
    form = ADD.replace("banner", "generic").replace('navigation "Sidebar"', "list")
    page = render(form, OPTIONS, origin=SITE, before=first(form), navigated=True)
    assert page.text == render(form, OPTIONS).text


def test_another_site_another_view_or_a_page_cut_prints_whole() -> None:
    whole = render(CHANGE, OPTIONS).text
    elsewhere = render(CHANGE, OPTIONS, origin="http://b.test", before=first(), navigated=True)
    assert elsewhere.text == whole
    cut = Options(interactive=True, max_chars=500)
    paged = render(CHANGE * 12, cut, origin=SITE, before=first(), navigated=True)
    assert paged.truncated and RUN not in paged.text


def test_the_same_document_leaves_out_the_same_lines_while_they_stay_the_same() -> None:
    page = render(CHANGE, OPTIONS, origin=SITE, before=first(), navigated=True)
    ticked = CHANGE.replace('"Staff" [ref=f1e10]', '"Staff" [checked] [ref=f1e10]')
    again = render(ticked, OPTIONS, origin=SITE, before=page.seen, navigated=False)
    assert again.text.splitlines()[0] == RUN
    assert again.seen is not None and again.seen.aliases == {}  # the refs are the same
    logged_out = ticked.replace('"Log out"', '"Log in"')
    changed = render(logged_out, OPTIONS, origin=SITE, before=page.seen, navigated=False)
    assert RUN not in changed.text and 'button "Log in" @f1e5' in changed.text


def test_an_old_ref_follows_its_element_across_navigations() -> None:
    class Page:  # a stand-in: aliases are kept per page object
        pass

    page = cast(Any, Page())
    alias(page, {"e7": "f1e7"})
    alias(page, {"f1e7": "f2e7"})
    assert resolve(page, "e7") == resolve(page, "f1e7") == "f2e7"
    assert resolve(page, "e10") == "e10"  # not carried over: stale, as Playwright says
    assert resolve(cast(Any, Page()), "e7") == "e7"  # another page has its own


def test_a_print_too_long_to_compare_cheaply_is_not_kept() -> None:
    def buttons(count: int) -> str:
        return "- generic [ref=e1]:\n" + "".join(
            f'  - button "B{n}" [ref=e{n + 2}]\n' for n in range(count)
        )

    wide = Options(interactive=True, max_chars=10**9)
    assert render(buttons(SEEN_LINES), wide, origin=SITE).seen is not None
    assert render(buttons(SEEN_LINES + 1), wide, origin=SITE).seen is None


def test_in_the_tree_view_a_run_ends_between_whole_subtrees() -> None:
    page = """\
- generic [ref={p}e1]:
  - banner [ref={p}e3]:
    - link "Site" [ref={p}e4] [cursor=pointer]
    - button "Log out" [ref={p}e5]
  - navigation "Breadcrumbs" [ref={p}e6]:
    - link "Home" [ref={p}e7] [cursor=pointer]
    - link "Users" [ref={p}e8] [cursor=pointer]
    - text: › {crumb}
  - main [ref={p}e9]:
    - heading "{crumb}" [level=1] [ref={p}e10]
"""
    before = render(page.format(p="", crumb="Add user"), Options(), origin=SITE).seen
    after = page.format(p="f1", crumb="alice")
    lines = render(after, Options(), origin=SITE, before=before, navigated=True).text
    assert lines.splitlines()[:3] == [
        "- (3 lines same as before, old refs working: banner; snapshot --full shows them)",
        '- navigation "Breadcrumbs" @f1e6:',  # not cut: its last crumb changed
        '  - link "Home" @f1e7',
    ]


def test_the_same_footer_prints_as_one_line_at_the_bottom() -> None:
    footer = """\
  - contentinfo [ref={p}e20]:
    - link "Docs" [ref={p}e21] [cursor=pointer]
    - link "Support" [ref={p}e22] [cursor=pointer]
"""
    before = render(ADD + footer.format(p=""), Options(), origin=SITE).seen
    page = render(
        CHANGE + footer.format(p="f1"), Options(), origin=SITE, before=before, navigated=True
    )
    lines = page.text.splitlines()
    assert lines[-2:] == [
        '  - button "Save" @f1e11',
        "- (3 lines same as before, old refs working: contentinfo; snapshot --full shows them)",
    ]
    assert page.seen is not None and page.seen.aliases["e22"] == "f1e22"
