"""What consent is asked about, and when a step must ask whatever ``auto_approve`` says.

- The approver reads the target as the page shows it: the element's role and accessible
  name (a field's label too), its text where that differs, and whether it submits a form,
  read from the element itself (``browser.target``), never from a locator's text, which a
  page chooses (``get_by_test_id("place-order")``).  A batch lists every command in it,
  each target described the same way.
- A commit always asks: a step whose element is named like one (``COMMIT_WORDS``, in its
  role's name, label, text or value) or that submits a form (a submit button, Enter in a
  field of a form, the vault's ``login_with``).  A page cannot rename its way past the rule:
  every name it gives the element is weighed, and a form's submission is seen from the
  element's kind, not its name.
- A prompt is sent whole, as one message or numbered parts a phone shows in full.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Iterable
from typing import Any

from ..browser.session import Session
from ..browser.target import Element, focused, read_element
from ..commands.protocol import Request
from ..commands.registry import Registry
from ..errors import BrowserdError, ErrorCode
from ..redact import redact
from .config import NEVER_AUTO_APPROVED

# What a commit is named: a step on such an element always asks.  docs/ask.md's list is this
# one (tests/e2e/test_consent.py checks it).
COMMIT_WORDS = (
    "submit",
    "pay",
    "purchase",
    "buy",
    "place order",
    "checkout",
    "check out",
    "send",
    "confirm",
    "delete",
)
COMMIT = re.compile(
    r"\b(?:" + "|".join(w.replace(" ", r"\s+") for w in COMMIT_WORDS) + r")\b", re.IGNORECASE
)
# Steps that act where the focus is: the focused element is their target.
FOCUS_TOOLS = frozenset({"press", "keydown", "keyboard_type", "insert_text"})
# A button pressed where the mouse is: what is under it is unknown here, so it always asks.
UNJUDGED = frozenset({"mouse_down", "mouse_up"})
# Steps that submit a form by design (the vault's login_with fills a login and submits it).
SUBMITTING = frozenset({"login_with"})
ENTER = frozenset({"enter", "numpadenter", "\n", "\r"})
SPACE = frozenset({" ", "space"})
FOCUSED = "the focused element"
# An approval prompt is sent whole: in parts a phone shows in full, or not at all.
APPROVAL_PART_CHARS = 3_500
APPROVAL_MAX_PARTS = 16


def reads_like_commit(text: str) -> bool:
    """Whether ``text`` names a commit, however the page spaces or styles it."""
    normal = unicodedata.normalize("NFKC", text)
    plain = "".join(c for c in normal if unicodedata.category(c) != "Cf")  # zero-width…
    return COMMIT.search(plain) is not None


def commits(tool: str, params: dict[str, Any], element: Element | None) -> bool:
    """Whether the call ``tool(params)`` on ``element`` (None: it acts on no element) is a
    commit.  An element that could not be read counts as one: what cannot be judged asks.
    """
    if tool in UNJUDGED or tool in SUBMITTING:
        return True
    if element is None:
        return False
    if not element.found:
        return True
    chosen = params.get("value") if tool == "select" else None
    words = [*element.words, *([chosen] if isinstance(chosen, str) else chosen or [])]
    if any(reads_like_commit(str(w)) for w in words):
        return True
    return _submits(tool, params, element)


def _submits(tool: str, params: dict[str, Any], element: Element) -> bool:
    """Whether the call submits a form: a click on a submit button, Enter in a field."""
    if tool in ("click", "dblclick"):
        return element.submits
    if tool in ("press", "keydown"):
        key = str(params.get("key", "")).split("+")[-1].lower()
        if key in ENTER:
            return element.enter_submits
        return key in SPACE and element.submits
    if tool in ("type", "keyboard_type"):
        typed = str(params.get("value") or params.get("text") or "")
        return ("\n" in typed or "\r" in typed) and element.enter_submits
    return False


def needs_consent(
    tool: str, asks: bool, acts_through: bool, commit: bool, auto_approve: Iterable[str]
) -> bool:
    """Whether a call must wait for the person: one that asks, and is not auto-approved.

    ``asks``: the call is gated, or can carry what the model read off the machine (the
    registry's ``sends``: a scrape's address is as good a channel as an open's).
    ``acts_through``: the call runs other tools (a batch, a find with an action), which
    auto_approve never covers.  A ``commit`` (see :func:`commits`) always asks, and so does a
    vault tool that fills a field (``NEVER_AUTO_APPROVED``; the config refuses them too).
    """
    if not asks:
        return False
    if acts_through or commit or tool in NEVER_AUTO_APPROVED:
        return True
    return tool not in set(auto_approve)


async def target_of(session: Session, tool: str, params: dict[str, Any]) -> Element | None:
    """The element a call acts on, read from the page: its ref or selector, or for a key or
    typed text without one, the focused element.  None when it acts on no element."""
    page = session.page_or_none
    ref, selector = params.get("ref"), params.get("selector")
    if ref or selector:
        given = str(ref or selector)
        if page is None:
            return Element(given, found=False)
        try:
            locator = await session.locate(ref=ref, selector=selector)
        except BrowserdError:
            return Element(given, found=False)
        label = session.tab.told_labels.get(int(given)) if given.isdigit() and session.tab else None
        if label is not None:  # a number of the picture: what it meant there, to check against
            given = f"label {label.describe()}"
        return await read_element(page, locator, given)
    if tool in FOCUS_TOOLS and page is not None:
        focus = await focused(page, session.scope)
        return None if focus is None else await read_element(page, focus, FOCUSED)
    return None


async def describe_action(
    registry: Registry, session: Session, request: Request, element: Element | None = None
) -> str:
    """``click button "Submit" (@e4) on http://…``: what an approver needs to decide, all of it.

    Every param is shown, typed text included (an IBAN, an address); only what the command
    marks ``secret`` and what looks like a key or a credential stays hidden.  A batch shows
    each of its commands on a line of its own, each target described.  ``element``: the
    call's target, when the caller has read it already.
    """
    tool = registry.get(request.tool)
    if tool.approval is not None:  # the tool says it best (the vault: which value goes where)
        element = element or await target_of(session, request.tool, request.params)
        target = "" if element is None else element.describe()
        return await tool.approval(session, request.params, target)
    if tool.delegates_only and tool.delegates is not None:
        calls = tool.delegates(request.params)
        rest = {k: v for k, v in request.params.items() if k != "commands"}
        head = f"a {request.tool} of {len(calls)} commands" + (f" {_shown(rest)}" if rest else "")
        lines = [head + ":"]
        for i, (inner, params) in enumerate(calls, 1):
            lines.append(f"{i}. {await _describe_call(registry, session, inner, params)}")
        described = "\n".join(lines)
        page = session.page_or_none
        return described + (f"\n(on {page.url})" if page is not None else "")
    described = await _describe_call(registry, session, request.tool, request.params, element)
    page = session.page_or_none
    return described + (f" on {page.url}" if page is not None else "")


async def _describe_call(
    registry: Registry,
    session: Session,
    tool: str,
    params: dict[str, Any],
    element: Element | None = None,
) -> str:
    """One call: its tool, its target described, its params.  A find's selector is what it
    searches, not a target: the find is shown as it was sent."""
    parts = [tool]
    if element is None and registry.get(tool).delegates is None:
        element = await target_of(session, tool, params)
    if element is not None:
        parts.append(element.describe())
    shown = {k: v for k, v in params.items() if k not in ("ref", "selector")}
    if shown:
        parts.append(_shown(shown))
    return " ".join(parts)


def _shown(params: dict[str, Any]) -> str:
    return json.dumps(redact(params, show_typed=True), ensure_ascii=False)


def approval_messages(who: str, what: str, code: str, timeout: float) -> list[str]:
    """The approval prompt, whole, as one message or as numbered parts a phone shows in full.

    Raises ``DENIED`` when the command is too long to be shown: an approver is never asked
    about a command it cannot read to the end.
    """
    ask = f'Reply "approve {code}" to run it, or "deny {code}" (expires in {timeout:g} s).'
    whole = f"{who} asks to run {what}.\n{ask}"
    if len(whole) <= APPROVAL_PART_CHARS:
        return [whole]
    body = f"{who} asks to run {what}."
    pieces = [body[i : i + APPROVAL_PART_CHARS] for i in range(0, len(body), APPROVAL_PART_CHARS)]
    if len(pieces) > APPROVAL_MAX_PARTS:
        raise BrowserdError(
            ErrorCode.DENIED,
            f"This command is too long to show the approver in full ({len(body)} characters;"
            f" at most {APPROVAL_PART_CHARS * APPROVAL_MAX_PARTS}): it was not run. Send a"
            " shorter one.",
        )
    n = len(pieces)
    messages = [f"[approval {code}, part {i} of {n}]\n{p}" for i, p in enumerate(pieces, 1)]
    messages[-1] += f"\n[end of the command: read all {n} parts]\n{ask}"
    return messages
