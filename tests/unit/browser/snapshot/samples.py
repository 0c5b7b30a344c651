"""Ai snapshots as Playwright prints them, for the pure tests of each phase."""

import re

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


# Lines as Playwright 1.65 prints them: a key with ": ", " #", braces or backticks in the
# name is single-quoted whole ('' for a quote inside), a value with ": " double-quoted.
QUOTED_RAW = """\
- generic [ref=e1]:
  - banner [ref=e2]:
    - 'button "Toggle theme (current theme: auto)" [ref=e3]'
    - 'link "Read: the manual" [ref=e4] [cursor=pointer]':
      - /url: "#colon"
  - main [ref=e6]:
    - 'heading "Names: quoted" [level=1] [ref=e7]'
    - 'button "it''s \\"quoted\\": yes" [ref=e8]'
    - link "- starts with a dash" [ref=e10] [cursor=pointer]:
      - /url: "#dash"
    - 'button "issue #42" [ref=e12]'
    - 'button "{braces}" [ref=e14]'
    - 'button "back\\\\slash: here" [ref=e17]'
    - 'button "Ünïcödé: café ✓ 中文" [ref=e18]'
    - 'searchbox "Search: anything" [ref=e29]': "key: value"
    - 'textbox "Password: 8 or more" [active] [ref=e31]': "hunter2: secret"
    - 'combobox "Colour: pick" [ref=e37]':
      - 'option "red: warm" [selected]'
      - 'option "blue: cold"'
    - generic [ref=e39] [cursor=pointer]: "click me: div"
"""


def big_raw(tables: int = 5, rows: int = 40) -> str:
    """A page of tables of rows, each row a cell with text and a button, and a footer."""
    lines = ["- generic [ref=e1]:", '  - navigation "Site" [ref=e2]:']
    n = 3
    for i in range(20):
        lines += [f'    - link "Nav {i}" [ref=e{n}] [cursor=pointer]:', f"      - /url: /n{i}"]
        n += 1
    lines.append(f"  - main [ref=e{n}]:")
    n += 1
    for t in range(tables):
        lines.append(f'    - table "T{t}" [ref=e{n}]:')
        n += 1
        for r in range(rows):
            lines += [
                f'      - row "r{r}" [ref=e{n}]:',
                f"        - cell [ref=e{n + 1}]:",
                f"          - text: Some words {r}",
                f"          - 'button \"Go: {t}.{r}\" [ref=e{n + 2}]'",
            ]
            n += 3
    lines += [f"  - contentinfo [ref=e{n}]:", f'    - link "Foot" [ref=e{n + 1}] [cursor=pointer]']
    return "\n".join(lines)
