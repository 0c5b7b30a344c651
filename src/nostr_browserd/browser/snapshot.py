"""Snapshots an agent can afford: Playwright's ai snapshot, trimmed but never renumbered.

``page.aria_snapshot(mode="ai")`` gives every visible node a ref and prints link URLs and
``[cursor=pointer]`` everywhere, so it is larger than the page on small pages.  We parse
its lines into a tree and print it again: refs only where an agent can act (or scope),
no ``/url:`` lines unless asked, unnamed wrappers dropped so their children move up.  Refs
are printed exactly as Playwright assigned them, so ``aria-ref=`` still resolves them.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass

from playwright.async_api import Error as PlaywrightError
from playwright.async_api import Frame, Page

from ..errors import BrowserdError, ErrorCode
from .masked import masked
from .refs import first_line, locate, parse_ref

ACTIONABLE = frozenset(
    [
        "link",
        "button",
        "textbox",
        "searchbox",
        "checkbox",
        "radio",
        "combobox",
        "listbox",
        "option",
        "menuitem",
        "menuitemcheckbox",
        "menuitemradio",
        "tab",
        "switch",
        "slider",
        "spinbutton",
        "treeitem",
    ]
)
# Refs kept in the tree view because they make good scopes, though nothing acts on them.
SCOPES = frozenset(
    [
        "iframe",
        "heading",
        "main",
        "navigation",
        "banner",
        "contentinfo",
        "complementary",
        "form",
        "search",
        "region",
        "dialog",
        "alertdialog",
        "table",
    ]
)
WRAPPERS = frozenset(["generic", "list", "listitem", "group", "none", "presentation", "rowgroup"])
# Runs of prose that print as one merged, shortened text line in the tree view.
PROSE = frozenset(
    ["text", "code", "strong", "emphasis", "mark", "subscript", "superscript", "time"]
)
LINE = re.compile(
    r'^(?P<indent> *)- (?:(?P<role>[^\s"\[:\']+)(?: "(?P<name>(?:[^"\\]|\\.)*)")?'
    r"(?P<attrs>(?: \[[^\]]*\])*)(?::(?P<inline>.*))?|(?P<raw>.*))$"
)
# A key Playwright had to YAML-quote (a name with ": ", " #", braces…): the whole key in
# single quotes, quotes inside doubled.  - 'button "Theme: auto" [ref=e5]': value
QUOTED = re.compile(r"^(?P<indent> *)- '(?P<key>(?:[^']|'')*)'(?::(?P<inline>.*))?$")
KEY = re.compile(
    r'^(?P<role>[^\s"\[:]+)(?: "(?P<name>(?:[^"\\]|\\.)*)")?(?P<attrs>(?: \[[^\]]*\])*)$'
)
MASK = "••••••••"
# Prose at least this long, ending a control's name, is a description the name repeats.
DESCRIPTION = 20
# The listboxes among the refs that are <select multiple> elements, whose options
# ``select`` picks by label (a custom listbox's options are clicked, by their refs).
SELECT_JS = "e => e.tagName === 'SELECT'"
LISTBOX = re.compile(r"^ *- '?listbox\b.*?\[ref=((?:f\d+)?e\d+)\]", re.MULTILINE)
# A text field printed with its value: only then can a password be on show.
SHOWS_VALUE = re.compile(r"^ *- '?(?:textbox|searchbox)\b.*\]'?: ", re.MULTILINE)


class Node:
    """One line of the ai snapshot and the lines nested under it."""

    __slots__ = (
        "actionable",
        "attrs",
        "children",
        "inline",
        "is_prop",
        "name",
        "parent",
        "raw",
        "ref",
        "role",
        "span",
    )

    def __init__(
        self,
        role: str,
        name: str | None = None,
        attrs: dict[str, str | None] | None = None,
        inline: str | None = None,
        raw: str | None = None,
    ) -> None:
        self.role = role
        self.name = name
        self.attrs = attrs or {}
        self.inline = inline
        self.raw = raw  # a line we could not parse, printed as it was
        self.children: list[Node] = []
        self.parent: Node | None = None
        # The printed lines [start, end) that came from this node and its subtree.
        self.span: tuple[int, int] | None = None
        self.ref = self.attrs.get("ref")
        self.is_prop = role.startswith("/")  # /url:, /placeholder:
        # Something one can act on.  A named generic is usually an editable region or a
        # custom control (contenteditable, summary): the ai snapshot cannot tell them apart.
        self.actionable = self.ref is not None and (
            role in ACTIONABLE
            or self.attrs.get("cursor") == "pointer"
            or (role == "generic" and bool(name))
        )

    def box(self) -> tuple[float, float, float, float] | None:
        value = self.attrs.get("box")
        if not value:
            return None
        x, y, w, h = (float(n) for n in value.split(","))
        return x, y, w, h


@dataclass
class Options:
    """What to show; see ``SnapshotParams`` for the meaning of each."""

    interactive: bool = False
    compact: bool = True
    depth: int | None = None
    urls: bool = False
    text_limit: int = 80
    viewport: bool = False
    max_chars: int = 20_000
    start: str | None = None


@dataclass
class Rendered:
    """The printed snapshot and what it holds."""

    text: str
    refs: int  # refs shown
    chars: int  # characters of the whole snapshot (from ``start``), shown or not
    truncated: bool
    next: str | None = None  # where the next page starts, when cut


def parse(raw: str) -> list[Node]:
    """The ai snapshot's lines as a forest (indentation is two spaces per level)."""
    roots: list[Node] = []
    stack: list[tuple[int, Node]] = []
    for line in raw.splitlines():
        match = LINE.match(line)
        if match is None:
            if stack:  # continuation of a multi-line value
                node = stack[-1][1]
                node.inline = f"{node.inline or ''} {line.strip()}".strip()
            continue
        indent, role, name, attrs, inline, body = match.groups()
        if role is None and body.startswith("'"):
            indent, role, name, attrs, inline, body = quoted_key(line) or match.groups()
        if role is None:
            node = Node(role="", raw=body)
        else:
            pairs = attributes(attrs) if attrs else None
            node = Node(role, name, pairs, inline.strip() or None if inline else None)
        depth = len(indent)
        while stack and stack[-1][0] >= depth:
            stack.pop()
        if stack:
            node.parent = stack[-1][1]
            node.parent.children.append(node)
        else:
            roots.append(node)
        stack.append((depth, node))
    return roots


def attributes(text: str) -> dict[str, str | None]:
    """`` [level=1] [ref=e5] [active]`` → ``{"level": "1", "ref": "e5", "active": None}``."""
    pairs: dict[str, str | None] = {}
    for item in text[2:-1].split("] ["):
        key, _, value = item.partition("=")
        pairs[key] = value or None
    return pairs


def quoted_key(line: str) -> tuple[str, str, str | None, str, str | None, None] | None:
    """The parts of a line whose key Playwright single-quoted, or None if it is not one."""
    match = QUOTED.match(line)
    key = match and KEY.match(match["key"].replace("''", "'"))
    if not match or not key:
        return None
    return match["indent"], key["role"], key["name"], key["attrs"], match["inline"], None


def find(nodes: list[Node], ref: str) -> Node | None:
    """The node carrying ``ref``, anywhere in the forest."""
    for node in nodes:
        if node.ref == ref:
            return node
        hit = find(node.children, ref)
        if hit is not None:
            return hit
    return None


def redact(nodes: list[Node], secrets: set[str]) -> None:
    """Mask the value a textbox shows when it is a password field's value."""
    for node in nodes:
        if (
            node.inline
            and node.role in ("textbox", "searchbox")
            and unquote(node.inline) in secrets
        ):
            node.inline = MASK
        redact(node.children, secrets)


def unquote(value: str) -> str:
    """YAML-ish quoted scalars come back as their text."""
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return value[1:-1].replace('\\"', '"').replace("\\\\", "\\")
    return value


def quote(text: str) -> str:
    """Quote a scalar the way the ai snapshot does when it could be misread."""
    if text[:1] in "\"'[{>|*&!%@`#-" or ": " in text or text.endswith(":"):
        return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return text


def text_of(node: Node, limit: int = 80) -> str:
    """The words inside a node, for an unnamed link or button."""
    parts: list[str] = []

    def walk(n: Node) -> None:
        if n.is_prop:
            return
        for piece in (n.name, unquote(n.inline) if n.inline else None):
            if piece:
                parts.append(piece)
        for child in n.children:
            walk(child)

    for child in node.children:
        walk(child)
    return " ".join(parts)[:limit]


class Printer:
    """Prints a filtered forest line by line; ``cut`` then fits it to the budget."""

    def __init__(
        self,
        options: Options,
        view: tuple[float, float, float, float] | None = None,
        selects: frozenset[str] = frozenset(),
    ) -> None:
        self.options = options
        self.view = view
        self.selects = selects  # refs of listboxes that are <select> elements
        self.lines: list[str] = []
        self.owners: list[Node] = []  # the node each line was printed for
        self.with_ref: list[bool] = []  # whether that line shows a ref

    def head(self, node: Node, *, inline: str | None) -> str:
        if node.raw is not None:
            return node.raw
        out = node.role
        if node.name is not None:
            out += f' "{node.name}"'
        for key, value in node.attrs.items():
            if key in ("cursor", "box", "active") or (key == "ref" and not self.keeps_ref(node)):
                continue
            out += f" [{key}]" if value is None else f" [{key}={value}]"
        return f"{out}: {inline}" if inline else out

    def emit(self, node: Node, line: str) -> None:
        self.lines.append(line)
        self.owners.append(node)
        self.with_ref.append(node.raw is None and node.ref is not None and self.keeps_ref(node))

    def keeps_ref(self, node: Node) -> bool:
        return node.actionable or (not self.options.interactive and node.role in SCOPES)

    def visible(self, node: Node, offset: tuple[float, float]) -> bool:
        view = self.view
        box = node.box()
        if view is None or box is None:
            return True
        x, y, w, h = box[0] + offset[0], box[1] + offset[1], box[2], box[3]
        vx, vy, vw, vh = view
        return w > 0 and h > 0 and x < vx + vw and x + w > vx and y < vy + vh and y + h > vy

    def tree(self, nodes: list[Node], level: int, offset: tuple[float, float]) -> None:
        """The default view: structure kept, noise dropped, wrappers hoisted."""
        for node in nodes:
            if node.role == "/url" and not self.options.urls:
                continue
            start = len(self.lines)
            self.tree_node(node, level, offset)
            node.span = (start, len(self.lines))

    def tree_node(self, node: Node, level: int, offset: tuple[float, float]) -> None:
        """One node of the tree view and what it holds."""
        inner = inner_offset(node, offset)
        compact = self.options.compact
        hoist = compact and node.role in WRAPPERS and not (node.name or node.inline)
        if not self.visible(node, offset) or (hoist and not node.actionable):
            self.tree(self.tidy(node.children), level, inner)
            return
        inline, children = node.inline, self.tidy(node.children)
        if not inline and len(children) == 1 and self.is_prose(children[0]):
            inline, children = children[0].inline, []
        if node.actionable and node.name is None and not inline and children:
            inline, children = text_of(node) or None, [c for c in children if c.is_prop]
        if inline and not node.actionable:
            inline = self.shorten(inline)
        if self.options.depth is not None and level + 1 >= self.options.depth:
            children = []
        if not self.options.urls:
            children = [c for c in children if c.role != "/url"]
        empty = not (node.name or inline or children or self.keeps_ref(node))
        if compact and empty and node.raw is None:
            return
        line = "  " * level + "- " + self.head(node, inline=inline)
        self.emit(node, line + (":" if children else ""))
        self.tree(children, level + 1, inner)

    def is_prose(self, node: Node) -> bool:
        """A run of text with nothing to act on inside."""
        return (
            node.role in PROSE
            and bool(node.inline)
            and not node.children
            and not self.keeps_ref(node)
        )

    def tidy(self, nodes: list[Node]) -> list[Node]:
        """Merge runs of prose into one text line; drop a label that repeats its field."""
        if not self.options.compact or len(nodes) < 2:
            return nodes
        merged: list[Node] = []
        for node in nodes:
            prose = self.is_prose(node)
            if prose and merged and merged[-1].role == "text" and not merged[-1].children:
                text = f"{unquote(merged[-1].inline or '')} {unquote(node.inline or '')}"
                merged[-1] = Node(role="text", inline=text)
                merged[-1].parent = node.parent
            elif prose and node.role != "text":
                merged.append(Node(role="text", inline=unquote(node.inline or "")))
                merged[-1].parent = node.parent
            else:
                merged.append(node)
        names = [n.name for n in merged]
        return [
            node
            for i, node in enumerate(merged)
            if not (
                node.role == "text"
                and node.inline
                and unquote(node.inline) in names[max(0, i - 1) : i + 2]
            )
        ]

    def shorten(self, text: str) -> str:
        """Cut prose to ``text_limit`` characters: get_text reads the rest."""
        limit = self.options.text_limit
        text = unquote(text)
        if limit and len(text) > limit:
            cut = text[:limit]
            space = cut.rfind(" ", limit - 20)
            text = (cut[:space] if space > 0 else cut).rstrip() + "…"
        return quote(text)

    def flat(self, nodes: list[Node], offset: tuple[float, float]) -> None:
        """The interactive view: one line per element an agent can act on.

        A ``<select>`` listbox carries its options on its own line (``select @ref "label"``
        picks them, so they need no refs), and a named generic that only repeats the name
        of the control beside it (a label's tooltip icon) is left out.
        """
        for i, node in enumerate(nodes):
            start = len(self.lines)
            shown = node.actionable and self.visible(node, offset)
            if shown and not repeats_neighbour(nodes, i):
                inline = node.inline
                if node.role == "combobox":
                    inline = next((c.name for c in node.children if "selected" in c.attrs), inline)
                elif node.ref in self.selects:
                    inline = self.options_of(node)
                elif node.name is None and not inline:
                    inline = text_of(node) or None
                self.emit(node, "- " + self.head(node, inline=inline))
            if not (shown and node.ref in self.selects):
                self.flat(node.children, inner_offset(node, offset))
            node.span = (start, len(self.lines))

    def options_of(self, listbox: Node) -> str | None:
        """A ``<select multiple>``'s options on one line: all of them when they fit in
        ``text_limit``, else how many there are and which are selected."""
        options = [n for n in descendants(listbox) if n.role == "option" and n.name is not None]
        if not options:
            return None
        named = [f'"{o.name}"' + (" [selected]" if "selected" in o.attrs else "") for o in options]
        everything = ", ".join(named)
        limit = self.options.text_limit
        if not limit or len(everything) <= limit:
            return everything
        chosen = [f'"{o.name}"' for o in options if "selected" in o.attrs]
        picked = f"selected {', '.join(chosen)}" if chosen else "none selected"
        return f"{len(options):,} options, {picked} (all: snapshot @{listbox.ref})"


def descendants(node: Node) -> list[Node]:
    """Every node under ``node``, in document order."""
    return [n for child in node.children for n in (child, *descendants(child))]


def repeats_neighbour(siblings: list[Node], i: int) -> bool:
    """Whether ``siblings[i]`` is a childless named generic whose name is the name of the
    actionable sibling beside it: the icon of a label whose title names the field too."""
    node = siblings[i]
    if node.role != "generic" or not node.name or node.children:
        return False
    beside = siblings[max(0, i - 1) : i] + siblings[i + 1 : i + 2]
    return any(n.actionable and n.role != "generic" and n.name == node.name for n in beside)


def shed_descriptions(nodes: list[Node]) -> None:
    """Cut from a control's name the description it ends with (``listbox "Available groups
    Choose groups by selecting them…"``): the page shows that text as prose of its own, and
    the interactive view, which leaves prose out, needs only the label to tell controls
    apart."""
    every = [n for root in nodes for n in (root, *descendants(root))]
    prose = {
        unquote(n.inline)
        for n in every
        if not n.actionable and n.inline and len(unquote(n.inline)) >= DESCRIPTION
    }
    for node in every:
        if not (node.actionable and node.name and prose):
            continue
        name = unescape(node.name)
        for text in prose:
            if len(name) > len(text) + 1 and name.endswith(" " + text):
                node.name = escape(name[: -len(text) - 1])
                break


def unescape(name: str) -> str:
    """A name as the ai snapshot quotes it (``\\"``, ``\\\\``) → its text."""
    return re.sub(r"\\(.)", r"\1", name)


def escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


def inner_offset(node: Node, offset: tuple[float, float]) -> tuple[float, float]:
    """Boxes inside an iframe are relative to it: where its children's origin lies."""
    box = node.box() if node.role == "iframe" else None
    return (offset[0] + box[0], offset[1] + box[1]) if box else offset


def render(
    raw: str,
    options: Options,
    *,
    scopes: list[str] | None = None,
    secrets: set[str] | None = None,
    view: tuple[float, float, float, float] | None = None,
    selects: frozenset[str] = frozenset(),
) -> Rendered:
    """Print ``raw`` (an ai snapshot) as ``options`` ask, within ``options.max_chars``.

    ``scopes`` limits it to the subtrees under those refs; ``view`` (x, y, width, height)
    to nodes whose boxes meet it, for a snapshot taken with ``boxes=True``; ``selects``
    names the listboxes that are ``<select>`` elements (``select_refs``).
    """
    nodes = parse(raw)
    if scopes is not None:
        roots = [find(nodes, ref) for ref in scopes]
        if None in roots:
            raise stale(scopes[roots.index(None)])
        nodes = [root for root in roots if root is not None]
    if secrets:
        redact(nodes, secrets)
    printer = Printer(options, view, selects)
    if options.interactive:
        shed_descriptions(nodes)
        printer.flat(nodes, (0, 0))
    else:
        printer.tree(printer.tidy(nodes), 0, (0, 0))
    return cut(printer, first_line_of(printer, nodes, options.start), options.max_chars)


def stale(ref: str) -> BrowserdError:
    return BrowserdError(
        ErrorCode.STALE_REF, f"Ref @{ref} is not on the page any more: take a new snapshot."
    )


def first_line_of(printer: Printer, nodes: list[Node], start: str | None) -> int:
    """Where a page of the snapshot starts: at a ref's first line or a 1-based line number."""
    if start is None:
        return 0
    if start.isdigit():
        line = int(start) - 1
        if not 0 <= line < max(len(printer.lines), 1):
            raise BrowserdError(
                ErrorCode.INVALID_PARAMS,
                f"Line {start} is not in this snapshot: it has {len(printer.lines):,} lines.",
            )
        return line
    ref = parse_ref(start)
    node = find(nodes, ref)
    if node is None:
        raise stale(ref)
    if node.span is None:
        raise BrowserdError(
            ErrorCode.INVALID_PARAMS, f"@{ref} is not part of this view: start at another ref."
        )
    return node.span[0]


LISTED = 12  # left-out subtrees named at most


def cut(printer: Printer, first: int, max_chars: int) -> Rendered:
    """The lines from ``first`` up to ``max_chars``; when cut, say what is left and where.

    A cut ends where a ref starts a line when one is near, so the next page starts at that
    ref (``start=@e530``) and nothing is missed or repeated; else at a line number.
    """
    lines, total = printer.lines, len(printer.lines)
    size = sum(len(line) + 1 for line in lines[first:])
    if size <= max_chars:
        shown = lines[first:]
        if first:
            shown = [*shown, f"[snapshot lines {first + 1:,}–{total:,} of {total:,}: the end]"]
        refs = sum(printer.with_ref[first:])
        return Rendered("\n".join(shown), refs, size, truncated=False)

    def note(end: int, start: str, parts: str) -> str:
        return (
            f"[snapshot cut: lines {first + 1:,}–{end:,} of {total:,} shown, of {size:,} "
            f"characters. Next page: start={start} (--start {start}), same options. {parts} "
            "Narrow it: interactive=true (-i), depth=N (-d), viewport=true (-v), "
            "scope=<ref or selector> (-s).]"
        )

    room = min(900, max_chars // 4)  # for the list of what was left out
    budget = max_chars - room - len(note(total, f"@f{total}e{total}", ""))
    end, used = first, 0
    while end < total and used + len(lines[end]) + 1 <= budget:
        used += len(lines[end]) + 1
        end += 1
    shown = lines[first:end]
    if end == first:  # one line longer than the whole budget: shown shortened, never skipped
        shown, end = [lines[first][: max(budget, 80)] + "…"], first + 1
    end, start = page_end(printer, first, end)
    text = "\n".join([*shown[: end - first], note(end, start, left_out(printer, end, room))])
    refs = sum(printer.with_ref[first:end])
    return Rendered(text, refs, size, truncated=True, next=start)


def page_end(printer: Printer, first: int, end: int) -> tuple[int, str]:
    """Move the cut back (a little) to a line a ref starts; the next page's ``start``.

    Among the last lines, the least indented such line wins, so a page ends between whole
    subtrees rather than inside one.
    """
    lines = printer.lines
    window = max(first, end - min(50, max(1, (end - first) // 4)))
    best: tuple[int, int, str] | None = None
    for k in range(end, window, -1):
        ref = anchor(printer, k)
        indent = len(lines[k]) - len(lines[k].lstrip(" ")) if k < len(lines) else 0
        if ref is not None and (best is None or indent < best[0]):
            best = (indent, k, ref)
    return (best[1], f"@{best[2]}") if best else (end, str(end + 1))


def anchor(printer: Printer, line: int) -> str | None:
    """The ref of the outermost node whose lines begin at ``line``, if any."""
    if line >= len(printer.lines):
        return None
    node: Node | None = printer.owners[line]
    found = None
    while node is not None and node.span is not None and node.span[0] == line:
        found = node.ref or found
        node = node.parent
    return found


def depth(node: Node) -> int:
    """How many ancestors a node has."""
    count = 0
    while node.parent is not None:
        node, count = node.parent, count + 1
    return count


def left_out(printer: Printer, end: int, room: int) -> str:
    """The whole subtrees after the cut, outermost first, by ref, role and lines, in ``room``."""
    parts: list[tuple[int, Node]] = []
    line = end
    while line < len(printer.lines):
        node = printer.owners[line]
        while (
            node.parent is not None and node.parent.span is not None and node.parent.span[0] >= end
        ):
            node = node.parent
        span = node.span or (line, line + 1)
        parts.append((span[1] - span[0], node))
        line = max(span[1], line + 1)
    named = sorted((p for p in parts if p[1].ref), key=lambda p: (depth(p[1]), -p[0]))
    for count in range(min(LISTED, len(named)), -1, -1):
        text = describe(parts, named[:count])
        if len(text) <= room:
            return text
    return ""


def describe(parts: list[tuple[int, Node]], listed: list[tuple[int, Node]]) -> str:
    """``Left out (…): @e145 table "T1" (161 lines); …; and 27 more parts (108 lines).``"""
    rest = len(parts) - len(listed)
    rest_lines = sum(p[0] for p in parts) - sum(p[0] for p in listed)
    if not listed:
        return f"Left out: {len(parts):,} parts ({rest_lines:,} lines)."
    entries = []
    for lines, node in sorted(listed, key=lambda p: p[1].span or (0, 0)):
        name = node.name or ""
        name = f' "{name[:30]}…"' if len(name) > 30 else f' "{name}"' if name else ""
        entries.append(f"@{node.ref} {node.role}{name} ({lines:,} lines)")
    text = "Left out (scope to one: snapshot @REF): " + "; ".join(entries)
    return text + (f"; and {rest:,} more parts ({rest_lines:,} lines)." if rest else ".")


PASSWORDS_JS = (
    "() => [...document.querySelectorAll('input[type=password]')].map(e => e.value).filter(Boolean)"
)
# Boxes are relative to the viewport, so the viewport is (0, 0, width, height).
VIEWPORT_JS = "() => [0, 0, window.innerWidth, window.innerHeight]"


async def password_values(page: Page) -> set[str]:
    """Current values of password fields in every frame, so snapshots can mask them."""
    values: set[str] = set()
    for frame in page.frames:
        try:
            values.update(await frame.evaluate(PASSWORDS_JS))
        except Exception:  # a frame navigating away has no values worth hiding
            continue
    return values


async def take(
    page: Page,
    options: Options,
    *,
    ref: str | None = None,
    selector: str | None = None,
    frame: Frame | None = None,
) -> Rendered:
    """Snapshot ``page`` (optionally scoped to a ref or selector) and render it.

    With ``frame`` (a child frame chosen by frame_switch) the selector resolves there, and
    without a ref or selector the snapshot shows that frame only.
    """
    view = tuple(await page.evaluate(VIEWPORT_JS)) if options.viewport else None
    scopes = [parse_ref(ref)] if ref is not None else None
    if selector is not None or (frame is not None and ref is None):
        scopes = await selector_scope(frame or page, selector or "body")
    raw = await page.aria_snapshot(mode="ai", boxes=options.viewport or None)
    shows = SHOWS_VALUE.search(raw)
    secrets = await password_values(page) | masked(page.context) if shows else set()
    selects = await select_refs(page, raw) if options.interactive else frozenset()
    return render(raw, options, scopes=scopes, secrets=secrets, view=view, selects=selects)


async def select_refs(page: Page, raw: str) -> frozenset[str]:
    """The refs of the listboxes in ``raw`` that are ``<select>`` elements."""

    async def is_select(ref: str) -> bool:
        # Counted first, which does not wait, as evaluate would for an element gone away
        # (evaluate_all, which does not wait either, finds nothing by aria-ref).
        locator = page.locator(f"aria-ref={ref}")
        try:
            return await locator.count() == 1 and await locator.evaluate(SELECT_JS)
        except PlaywrightError:  # it or its frame went away: printed as any listbox
            return False

    listboxes = LISTBOX.findall(raw)
    found = await asyncio.gather(*(is_select(ref) for ref in listboxes))
    return frozenset(ref for ref, yes in zip(listboxes, found, strict=True) if yes)


async def selector_scope(page: Page | Frame, selector: str) -> list[str]:
    """The refs at the top of the subtree ``selector`` names.

    A scoped ``aria_snapshot`` replaces the page's ref table, so we only read its top-level
    refs here and then print those subtrees out of a full snapshot, where every ref lives.
    """
    locator = await locate(page, selector=selector)
    try:
        scoped = await locator.aria_snapshot(mode="ai")
    except Exception as exc:
        raise BrowserdError(ErrorCode.ELEMENT_NOT_FOUND, first_line(exc)) from None
    refs = [n.ref for n in parse(scoped) if n.ref is not None]
    if not refs:
        raise BrowserdError(
            ErrorCode.ELEMENT_NOT_FOUND, f"{selector!r} holds nothing a snapshot shows."
        )
    return refs
