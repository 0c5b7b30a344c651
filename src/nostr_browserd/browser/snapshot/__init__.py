"""Snapshots an agent can afford: Playwright's ai snapshot, trimmed but never renumbered.

``page.aria_snapshot(mode="ai")`` gives every visible node a ref and prints link URLs and
``[cursor=pointer]`` everywhere, so it is larger than the page on small pages.  We parse
its lines into a tree (``tree.py``) and print it again (``printer.py``): refs only where an
agent can act (or scope), no ``/url:`` lines unless asked, unnamed wrappers dropped so their
children move up; a print over the cap is cut into pages that start and end at refs
(``pages.py``).  Refs are printed exactly as Playwright assigned them, so ``aria-ref=`` still
resolves them.  ``take.py`` reads the page and runs the three.
"""

from .pages import Rendered
from .printer import Options
from .take import SHOWS_VALUE, render, take
from .tree import ACTIONABLE, MASK, Node, inner_offset, parse, unquote

__all__ = [
    "ACTIONABLE",
    "MASK",
    "SHOWS_VALUE",
    "Node",
    "Options",
    "Rendered",
    "inner_offset",
    "parse",
    "render",
    "take",
    "unquote",
]
