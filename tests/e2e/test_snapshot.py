"""Snapshots: smaller than Playwright's ai snapshot, and every ref in them still works."""

import html
import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nostr_browserd.browser.snapshot import ACTIONABLE, Options, render, take

REFS = re.compile(r"\[ref=(\w+)\]")


async def snapshot(call, command="snapshot"):
    response = await call(command)
    assert response["success"], response
    return response["data"]


async def test_every_printed_ref_resolves(call, session, site_url):
    for page in ("form.html", "buttons.html", "shadow.html", "index.html"):
        await call(f"open {site_url}/{page}")
        full = await snapshot(call)
        interactive = await snapshot(call, "snapshot -i")
        refs = set(REFS.findall(full["snapshot"]))
        assert refs >= set(REFS.findall(interactive["snapshot"])) and refs
        for ref in refs:
            assert await session.page.locator(f"aria-ref={ref}").count() == 1, (page, ref)


async def test_result_carries_page_state(call, site_url):
    await call(f"open {site_url}/form.html")
    data = await snapshot(call, "snapshot -i")
    assert data["url"] == f"{site_url}/form.html"
    assert (data["title"], data["tab"], data["dialog"]) == ("Form", "t1", None)
    assert "truncated" not in data  # said only when cut
    assert data["refs"] == len(REFS.findall(data["snapshot"]))


async def test_open_can_snapshot(call, site_url):
    data = (
        await call({"tool": "open", "params": {"url": f"{site_url}/form.html", "snapshot": True}})
    )["data"]
    assert 'button "Send"' in data["snapshot"]


async def test_frames_same_and_cross_origin(call, site_url, site2_url):
    await call(f"open {site_url}/frames.html?cross={site2_url}")
    text = (await snapshot(call, "snapshot -i"))["snapshot"]
    buttons = re.findall(r'button "Frame button" \[ref=(f\d+e\d+)\]', text)
    assert len(buttons) == 2, text
    cross = buttons[1]
    clicked = await call(f"click @{cross}")
    assert clicked["data"]["verified"] is True
    port2 = site2_url.rsplit(":", 1)[1]
    assert f'button "Pressed in {port2}"' in (await snapshot(call, "snapshot -i"))["snapshot"]


async def test_shadow_dom_is_in_the_snapshot(call, site_url):
    await call(f"open {site_url}/shadow.html")
    text = (await snapshot(call, "snapshot -i"))["snapshot"]
    ref = re.search(r'button "Shadow button" \[ref=(\w+)\]', text).group(1)
    assert (await call(f"click @{ref}"))["data"]["verified"] is True


async def test_scope_by_selector_keeps_other_refs_valid(call, site_url):
    await call(f"open {site_url}/buttons.html")
    full = (await snapshot(call))["snapshot"]
    accept = re.search(r'button "Accept cookies" \[ref=(\w+)\]', full).group(1)
    main = re.search(r"main \[ref=(\w+)\]", full).group(1)
    scoped = (await snapshot(call, 'snapshot -s "main"'))["snapshot"]
    assert "Accept cookies" not in scoped and 'button "Count"' in scoped
    assert (await snapshot(call, f"snapshot @{main}"))["snapshot"] == scoped
    assert (await call(f"click @{accept}"))["success"]  # refs outside the scope still work


async def test_scope_errors(call, site_url):
    await call(f"open {site_url}/buttons.html")
    assert (await call("snapshot -s .dup"))["error"]["code"] == "AMBIGUOUS"
    assert (await call("snapshot -s #nothing"))["error"]["code"] == "ELEMENT_NOT_FOUND"
    assert (await call("snapshot @e999"))["error"]["code"] == "STALE_REF"


async def test_viewport_only(call, site_url):
    await call(f"open {site_url}/sections.html")
    top = (await snapshot(call, "snapshot -i -v"))["snapshot"]
    assert 'link "Link 0.0"' in top and 'link "Link 7.24"' not in top
    await call("scroll down 100000")
    bottom = (await snapshot(call, "snapshot -i -v"))["snapshot"]
    assert 'link "Link 7.24"' in bottom and 'link "Link 0.0"' not in bottom


async def test_big_page_is_cut_with_a_marker(call, site_url):
    await call(f"open {site_url}/sections.html")
    data = await snapshot(call, "snapshot -i --max-chars 2000")
    assert data["truncated"] is True
    assert len(data["snapshot"]) <= 2000
    assert "Narrow it" in data["snapshot"].splitlines()[-1]


# Playwright's own text, read without our parser: the role after "- " (and a YAML quote),
# the last [ref=…] on the line, and whether it is [cursor=pointer].
PLAYWRIGHT_LINE = re.compile(r"^ *- '?([a-z]+)\b.*\[ref=([a-z0-9]+)\](.*)$")


def actionable_refs(raw: str) -> set[str]:
    """Refs Playwright gave to elements one can act on, straight from its text."""
    refs = set()
    for line in raw.splitlines():
        match = PLAYWRIGHT_LINE.match(line)
        if match and (match[1] in ACTIONABLE or "[cursor=pointer]" in match[3]):
            refs.add(match[2])
    return refs


async def test_quoted_names_keep_their_refs_in_the_browser(call, session, site_url):
    await call(f"open {site_url}/quoting.html")
    raw = await session.page.aria_snapshot(mode="ai")
    assert raw.count("\n    - '") >= 10, raw  # the page does make Playwright quote lines
    wanted = actionable_refs(raw)
    assert len(wanted) >= 30
    for command in ("snapshot -i", "snapshot"):
        shown = set(REFS.findall((await snapshot(call, command))["snapshot"]))
        assert wanted <= shown, (command, wanted - shown)


async def test_a_password_under_a_quoted_label_is_masked(call, session, site_url):
    await call(f"open {site_url}/quoting.html")
    filled = await call('fill #pw "hunter2: secret" --secret')
    assert filled["success"], filled
    raw = await session.page.aria_snapshot(mode="ai")
    assert "hunter2: secret" in raw  # Playwright shows it, on a quoted line
    for command in ("snapshot -i", "snapshot"):
        text = (await snapshot(call, command))["snapshot"]
        assert "hunter2" not in text and "••••••••" in text


NAME_CHARS = st.sampled_from([*"ab Z09:'\"-#{}`[]\\&*!|>%@,?~éß中✓🙂", ": ", " #"])


NAMES = st.lists(NAME_CHARS, min_size=1, max_size=12).map("".join).filter(str.strip)


ELEMENTS = {
    "button": "<button>{}</button>",
    "link": '<a href="#x">{}</a>',
    "textbox": '<input aria-label="{}">',
    "checkbox": '<label><input type="checkbox">{}</label>',
    "select": '<select aria-label="{0}"><option>{0}</option></select>',
    "tab": '<div role="tab" tabindex="0">{}</div>',
    "pointer": '<div style="cursor:pointer" onclick="1">{}</div>',
    "heading": "<h2>{}</h2>",
}


@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(st.tuples(st.sampled_from(sorted(ELEMENTS)), NAMES), min_size=1, max_size=8))
async def test_every_playwright_ref_is_in_ours(session, elements):
    body = "".join(ELEMENTS[kind].format(html.escape(name)) for kind, name in elements)
    await session.page.set_content(f"<main>{body}</main>")
    raw = await session.page.aria_snapshot(mode="ai")
    wanted = actionable_refs(raw)
    for options in (Options(interactive=True), Options()):
        ours = set(REFS.findall((await take(session.page, options)).text))
        assert wanted <= ours, (raw, wanted - ours)


async def test_a_big_page_reads_in_pages(call, session, site_url):
    await call(f"open {site_url}/sections.html")
    whole = render(await session.page.aria_snapshot(mode="ai"), Options(max_chars=10**9))
    lines, start, pages = [], None, 0
    while True:
        command = "snapshot --max-chars 1000" + (f" --start {start}" if start else "")
        data = await snapshot(call, command)
        page = data["snapshot"].splitlines()
        assert len(data["snapshot"]) <= 1000
        lines += page[:-1] if page[-1].startswith("[snapshot") else page
        pages, start = pages + 1, data.get("next")  # said only when there is a next page
        if start is None:
            break
    assert pages >= 5 and lines == whole.text.splitlines()


async def test_a_left_out_subtree_can_be_scoped_to(call, site_url):
    await call(f"open {site_url}/sections.html")
    data = await snapshot(call, "snapshot --max-chars 3000")
    note = data["snapshot"].splitlines()[-1]
    left = re.findall(r'@(e\d+) region "([^"]+)" \(([\d,]+) lines\)', note)
    assert len(left) >= 2, note
    for ref, name, count in left:
        scoped = (await snapshot(call, f"snapshot @{ref}"))["snapshot"].splitlines()
        assert scoped[0].startswith(f'- region "{name}" [ref={ref}]')
        assert len(scoped) == int(count.replace(",", ""))


async def test_delta_sends_what_changed_with_the_same_refs(call, site_url):
    await call(f"open {site_url}/form.html")
    first = await snapshot(call, "snapshot --delta")
    assert first["delta"] is False and "no earlier snapshot" in first["note"]
    name = re.search(r'textbox "Name" \[ref=(\w+)\]', first["snapshot"]).group(1)
    send = re.search(r'button "Send" \[ref=(\w+)\]', first["snapshot"]).group(1)
    same = await snapshot(call, "snapshot --delta")
    assert same["delta"] is True and same["snapshot"].startswith("[delta: nothing changed")
    assert (await call(f"fill @{name} Ada"))["success"]
    assert (await call(f"click @{send}"))["success"]
    sent = await snapshot(call, "snapshot --delta")
    lines = sent["snapshot"].splitlines()
    assert sent["delta"] is True and lines[0].startswith("[delta since this tab's last snapshot")
    assert f'  - textbox "Name" [ref={name}]:' in lines  # unmarked: it places the change
    assert any(line.startswith("+ ") and "Ada" in line for line in lines)
    assert any(line.startswith("+ ") and "sent Ada" in line for line in lines)
    assert 'textbox "Email"' not in sent["snapshot"]
    assert len(sent["snapshot"]) < len(first["snapshot"]) // 2
    # a ref from the first, full snapshot still acts after the delta
    assert (await call(f"fill @{name} Bea"))["success"]
    assert "Bea" in (await snapshot(call, "snapshot --delta"))["snapshot"]
    other = await snapshot(call, "snapshot -i --delta")
    assert other["delta"] is False and "other options" in other["note"]
    await call(f"open {site_url}/form.html")
    again = await snapshot(call, "snapshot -i --delta")
    assert again["delta"] is False and "navigated" in again["note"]
    assert 'button "Send"' in again["snapshot"]


async def test_delta_of_a_checked_box_marks_its_line_changed(call, site_url):
    await call(f"open {site_url}/form.html")
    full = await snapshot(call, "snapshot -i")
    agree = re.search(r'checkbox "Agree" \[ref=(\w+)\]', full["snapshot"]).group(1)
    assert (await call(f"check @{agree}"))["success"]
    delta = await snapshot(call, "snapshot -i --delta")
    assert delta["delta"] is True and "1 changed (~)" in delta["snapshot"]
    assert f'~ - checkbox "Agree" [checked] [ref={agree}]' in delta["snapshot"].splitlines()
    assert delta["refs"] == 1


# --- the interactive view, as short as acting allows (tests/site/lists.html) -----------


def ref_in(text: str, line_start: str) -> str:
    """The ref on the line of ``text`` that starts ``- {line_start}``."""
    match = re.search(rf"^- {re.escape(line_start)}[^\n]*?\[ref=(\w+)\]", text, re.MULTILINE)
    assert match, text
    return match.group(1)


async def test_a_selects_options_ride_on_its_line(call, site_url):
    await call(f"open {site_url}/lists.html")
    text = (await snapshot(call, "snapshot -i"))["snapshot"]
    lines = text.splitlines()
    colours, perms = ref_in(text, 'listbox "Colours"'), ref_in(text, 'listbox "Permissions"')
    assert f'- listbox "Colours" [ref={colours}]: "Red", "Green", "Blue"' in lines
    summary = f"5 options, none selected (all: snapshot @{perms})"
    assert f'- listbox "Permissions" [ref={perms}]: {summary}' in lines
    assert 'option "Red"' not in text and "Can add user" not in text
    # a custom listbox is no <select>: its options are clicked, so they keep their refs
    assert re.search(r'^- option "One" \[ref=\w+\]$', text, re.MULTILINE), text
    # select picks them by label, several at once (a list: JSON), and the line then says which
    several = {"tool": "select", "params": {"ref": f"@{colours}", "value": ["Green", "Blue"]}}
    assert (await call(several))["success"]
    assert (await call(f'select @{perms} "Sessions | session | Can view session"'))["success"]
    after = (await snapshot(call, "snapshot -i"))["snapshot"].splitlines()
    assert (
        f'- listbox "Colours" [ref={colours}]: "Red", "Green" [selected], "Blue" [selected]'
        in after
    )
    chosen = f'5 options, selected "Sessions | session | Can view session" (all: snapshot @{perms})'
    assert f'- listbox "Permissions" [ref={perms}]: {chosen}' in after
    every = (await snapshot(call, f"snapshot @{perms}"))["snapshot"]
    assert 'option "Administration | log entry | Can add log entry"' in every


async def test_a_label_icon_and_a_repeated_description_are_left_out(call, session, site_url):
    await call(f"open {site_url}/lists.html")
    raw = await session.page.aria_snapshot(mode="ai")
    icon = 'generic "Type into this box to filter the colours."'
    assert icon in raw and 'listbox "Colours Choose colours by selecting' in raw
    text = (await snapshot(call, "snapshot -i"))["snapshot"]
    assert "generic" not in text and "Choose colours" not in text
    box = ref_in(text, 'textbox "Type into this box to filter the colours."')
    assert (await call(f"fill @{box} red"))["success"]
    assert ref_in(text, 'listbox "Colours"')
    # the tree view, which shows the description as prose beside it, is as it was
    tree = (await snapshot(call))["snapshot"]
    assert icon in tree and 'listbox "Colours Choose colours by selecting' in tree


async def test_open_with_a_snapshot_is_the_tabs_delta_baseline(call, site_url):
    opened = await call(f"open {site_url}/form.html --snapshot")
    assert 'button "Send"' in opened["data"]["snapshot"]
    delta = await snapshot(call, "snapshot -i --delta")
    assert delta["delta"] is True, delta
    assert delta["snapshot"].startswith("[delta: nothing changed")
