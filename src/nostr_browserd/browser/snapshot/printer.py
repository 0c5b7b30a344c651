"""Rendering the tree: the two views (the tree, and one line per actionable element).

What is dropped: ``/url:`` lines unless asked, refs where nothing can be done (or scoped),
unnamed wrappers (their children move up), prose past the text limit.  Refs are printed as
Playwright assigned them.  The printer remembers which node each line came from, so the
pages (``pages.py``) can cut between whole subtrees and name what they left out.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .tree import (
    Node,
    descendants,
    escape,
    inner_offset,
    quote,
    text_of,
    unescape,
    unquote,
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


# Where a printed line shows its ref: `` @e5`` after the role, name and state, before any
# ``: value``.  Read this way, a name or value that holds "@e5" is never taken for a ref.
PRINTED_REF = re.compile(
    r'^ *- [^\s"\[:]+(?: "(?:[^"\\]|\\.)*")?(?: \[[^\]]*\])* @((?:f\d+)?e\d+)(?=:|$)',
    re.MULTILINE,
)


def printed_ref(line: str) -> str | None:
    """The ref a printed line shows, if any."""
    match = PRINTED_REF.match(line)
    return match.group(1) if match else None


WRAPPERS = frozenset(["generic", "list", "listitem", "group", "none", "presentation", "rowgroup"])


# Runs of prose that print as one merged, shortened text line in the tree view.
PROSE = frozenset(
    ["text", "code", "strong", "emphasis", "mark", "subscript", "superscript", "time"]
)


# Prose at least this long, ending a control's name, is a description the name repeats.
DESCRIPTION = 20


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


@dataclass(frozen=True)
class Seen:
    """What a snapshot printed, for the next one to leave out what it repeats (``seen.py``)."""

    origin: str
    lines: tuple[str, ...]  # every line of the whole print, refs taken out
    refs: tuple[str | None, ...]  # the ref each line showed
    kinds: tuple[str, ...]  # each line's place: "landmark", "main" or "other"
    head: int = 0  # lines left out at the top
    tail: int = 0  # and at the bottom
    aliases: dict[str, str] = field(default_factory=dict)  # old ref → the same element's now


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
            if key not in ("cursor", "box", "active", "ref"):
                out += f" [{key}]" if value is None else f" [{key}={value}]"
        if node.ref is not None and self.keeps_ref(node):
            out += f" @{node.ref}"
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
        if node.actionable and node.name and prose:
            name = unescape(node.name)
            label = label_before(name, prose)
            if label is not None:
                node.name = escape(label)


def label_before(name: str, prose: set[str]) -> str | None:
    """``name`` without the longest text of ``prose`` it ends with after a space, or None.

    Each space is tried as the description's start, a set lookup each, so a page of
    thousands of controls and prose lines is read in linear time, not their product.
    """
    space = name.find(" ", 1)
    while space != -1:
        if name[space + 1 :] in prose:
            return name[:space]
        space = name.find(" ", space + 1)
    return None
