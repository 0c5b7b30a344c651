"""Snapshots an agent can afford: Playwright's ai snapshot, trimmed but never renumbered.

``page.aria_snapshot(mode="ai")`` gives every visible node a ref and prints link URLs and
``[cursor=pointer]`` everywhere, so it is larger than the page on small pages.  We parse
its lines into a tree (``tree.py``) and print it again (``printer.py``): refs only where an
agent can act (or scope), no ``/url:`` lines unless asked, unnamed wrappers dropped so their
children move up; a print over the cap is cut into pages that start and end at refs
(``pages.py``).  Refs are printed as Playwright assigned them (`` @e5`` after the line's role,
name and state), so ``aria-ref=`` still resolves them.  After a navigation, the lines the
last snapshot of the same site printed the same (its header, its navigation) print as one
(``seen.py``).  ``take.py`` reads the page and runs them.
"""

from .pages import Rendered
from .printer import PRINTED_REF, Options, printed_ref
from .take import SHOWS_VALUE, render, take
from .tree import ACTIONABLE, MASK, Node, inner_offset, parse, unquote

__all__ = [
    "ACTIONABLE",
    "MASK",
    "PRINTED_REF",
    "SHOWS_VALUE",
    "Node",
    "Options",
    "Rendered",
    "inner_offset",
    "parse",
    "printed_ref",
    "render",
    "take",
    "unquote",
]
