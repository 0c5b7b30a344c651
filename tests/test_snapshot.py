"""Snapshots: smaller than Playwright's ai snapshot, and every ref in them still works."""

import re

from nostr_browserd.browser.snapshot import Options, render

RAW = """\
- generic [active] [ref=e1]:
  - navigation "Site" [ref=e2]:
    - list [ref=e3]:
      - listitem [ref=e4]:
        - link "Home" [ref=e5] [cursor=pointer]:
          - /url: /index.html
      - listitem [ref=e6]:
        - link [ref=e7] [cursor=pointer]:
          - /url: /abs.html
          - code [ref=e8]: abs()
  - main [ref=e9]:
    - heading "Title" [level=1] [ref=e10]
    - paragraph [ref=e11]:
      - text: Some words
      - code [ref=e12]: here
      - text: and more words that go on for a long while, longer than the limit of the view
    - text: Name
    - textbox "Name" [ref=e13]: Ada
    - textbox "Password" [ref=e14]: hunter2
    - generic [ref=e15] [cursor=pointer]: Clickable
    - paragraph [ref=e16]
"""
REFS = re.compile(r"\[ref=(\w+)\]")


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


def test_password_values_are_masked():
    text = render(RAW, Options(), secrets={"hunter2"}).text
    assert "hunter2" not in text
    assert 'textbox "Password" [ref=e14]: ••••••••' in text


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


def test_cut_says_how_to_narrow():
    rendered = render(RAW, Options(max_chars=210))
    assert rendered.truncated
    assert len(rendered.text) <= 210 + 250
    assert rendered.text.splitlines()[-1].startswith("[snapshot cut: showing")
    assert "scope=" in rendered.text and "interactive=true" in rendered.text


# --- in the browser -------------------------------------------------------------------


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
    assert (data["title"], data["tab"], data["dialog"], data["truncated"]) == (
        "Form",
        "t1",
        None,
        False,
    )
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
    await call(f"open {site_url}/big.html")
    top = (await snapshot(call, "snapshot -i -v"))["snapshot"]
    assert 'link "Item 0"' in top and 'link "Item 200"' not in top
    await call("scroll down 100000")
    bottom = (await snapshot(call, "snapshot -i -v"))["snapshot"]
    assert 'link "Item 4999"' in bottom and 'link "Item 0"' not in bottom


async def test_big_page_is_cut_with_a_marker(call, site_url):
    await call(f"open {site_url}/big.html")
    data = await snapshot(call, "snapshot -i --max-chars 2000")
    assert data["truncated"] is True
    assert len(data["snapshot"]) < 2300
    assert "Narrow it" in data["snapshot"].splitlines()[-1]
