"""Building the tree: the ai snapshot's lines parsed into nodes, and what is read off them.

Playwright prints one node a line, two spaces of indent per level; a key with ``: ``, `` #``,
braces or backticks in it comes YAML-quoted.  :func:`parse` reads both into :class:`Node`
trees, which the printer (``printer.py``) prints again and the pages (``pages.py``) cut.
"""

from __future__ import annotations

import re

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


def descendants(node: Node) -> list[Node]:
    """Every node under ``node``, in document order."""
    return [n for child in node.children for n in (child, *descendants(child))]


def depth(node: Node) -> int:
    """How many ancestors a node has."""
    count = 0
    while node.parent is not None:
        node, count = node.parent, count + 1
    return count


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


def unescape(name: str) -> str:
    """A name as the ai snapshot quotes it (``\\"``, ``\\\\``) → its text."""
    return re.sub(r"\\(.)", r"\1", name)


def escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


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


def inner_offset(node: Node, offset: tuple[float, float]) -> tuple[float, float]:
    """Boxes inside an iframe are relative to it: where its children's origin lies."""
    box = node.box() if node.role == "iframe" else None
    return (offset[0] + box[0], offset[1] + box[1]) if box else offset
