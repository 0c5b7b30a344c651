"""What an element is, read from the page itself: its role and accessible name, its label,
text and value, and whether activating it submits a form.

The commit rule and the approver judge this, never a locator's text: Playwright names an
element by its test id or its id whenever it can (``get_by_test_id("place-order")``), and a
page chooses those.  Every fact here comes from Playwright's own calls (a scoped aria
snapshot, ``inner_text``, ``input_value``, selector matches), which run in its isolated
world: a page's scripts cannot redefine what they return.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import unicodedata
from dataclasses import dataclass, field

from playwright.async_api import Error as PlaywrightError
from playwright.async_api import Frame, Locator, Page

from .snapshot import parse, unquote

READ_MS = 2000  # each read of a live element; a page that hangs it is judged unread
REFILL_S = 15.0  # the full snapshot that puts the ref table back (1.2 s on tests' big.html)
# The element and the controls around it that a click on it activates: a click on a span
# inside a submit button submits, and so does one on a label naming a submit button.
CONTROLS = (
    "xpath=ancestor-or-self::*[self::button or self::a[@href] or self::input or self::label"
    " or self::summary or @role='button' or @role='link' or @role='menuitem' or @role='tab'"
    " or @role='option' or @role='switch' or @role='checkbox' or @role='radio']"
)
MAX_CONTROLS = 4
# A submit button: a <button> of any type but button and reset (a typo is a submit button
# too), or an input of type submit or image.
SUBMITTER = (
    ":scope:is(button:not([type=button i], [type=reset i]), input[type=submit i],"
    " input[type=image i])"
)
# A field where Enter submits its form (implicit submission): an input that is no button.
ENTER_FIELD = ":scope:is(input:not([type=button i], [type=reset i], [type=hidden i]))"
IN_FORM = "xpath=self::*[ancestor::form or @form]"
PASSWORD = ":scope[type=password i]"
LABEL_OF = "xpath=ancestor::label[1]"
LABELLED = "xpath=descendant::*[self::button or self::input or self::select or self::textarea][1]"
FIELD_ROLES = frozenset(
    {"textbox", "searchbox", "combobox", "listbox", "spinbutton", "slider", "checkbox"}
    | {"radio", "switch"}
)
SHOWN_TEXT = 120  # an element's text in a description; the judgement reads all of it


@dataclass(frozen=True)
class Element:
    """An element as the person would name it, and what the commit rule weighs.

    ``given`` is the ref or selector the requester sent ("the focused element" for a key);
    ``words`` holds every name, label, text and value read, for the commit words;
    ``submits``: a click (or Enter, Space) on it submits a form; ``enter_submits``: it is a
    field of a form, where Enter submits.
    """

    given: str
    found: bool = True
    role: str = ""
    name: str = ""
    label: str = ""
    text: str = ""
    words: tuple[str, ...] = field(default=(), repr=False)
    submits: bool = False
    enter_submits: bool = False

    def describe(self) -> str:
        """``button "Place order" (@e5), submits a form``; ``textbox "Email" (label "Mail")``."""
        if not self.found:
            return f"target {self.given!r} (not found on the page now)"
        parts = [self.role or "element"]
        if self.name:
            parts.append(quoted(self.name))
        if self.label and self.label != self.name:
            parts.append(f"(label {quoted(self.label)})")
        if self.text and self.text != self.name and self.role not in FIELD_ROLES:
            parts.append(f"(text {quoted(shortened(self.text))})")
        parts.append(f"({self.given})")
        described = " ".join(parts)
        if self.submits:
            described += ", submits a form"
        return described


def quoted(text: str) -> str:
    """The page's words in quotes it cannot close: a name never passes for the prompt's own
    text (a quote, a new line, a right-to-left override are escaped)."""
    escaped = json.dumps(text, ensure_ascii=False)
    return "".join(f"\\u{ord(c):04x}" if unicodedata.category(c) == "Cf" else c for c in escaped)


def shortened(text: str) -> str:
    """One line of an element's text, cut where it is long, and saying so."""
    flat = " ".join(text.split())
    if len(flat) <= SHOWN_TEXT:
        return flat
    return f"{flat[:SHOWN_TEXT]}… ({len(flat)} characters)"


async def read_element(page: Page, locator: Locator, given: str) -> Element:
    """Read the element ``locator`` resolves to, and put the page's ref table back.

    A scoped aria snapshot replaces the page's ref table; the full one afterwards gives
    every element its own ref again (refs stay on their element), as a snapshot would.
    """
    try:
        return await asyncio.wait_for(_read(locator, given), READ_MS * 4 / 1000)
    except (PlaywrightError, TimeoutError):
        return Element(given, found=False)
    finally:
        with contextlib.suppress(PlaywrightError, TimeoutError):
            await asyncio.wait_for(page.aria_snapshot(mode="ai"), REFILL_S)


async def focused(page: Page, scope: Page | Frame) -> Locator | None:
    """The element with keyboard focus, in the chosen frame or any frame of the page."""
    for frame in (scope, *page.frames):
        locator = frame.locator("*:focus:not(iframe, frame, body)")
        with contextlib.suppress(PlaywrightError):
            if await locator.count() == 1:
                return locator
    return None


async def _read(locator: Locator, given: str) -> Element:
    if await locator.count() != 1:
        return Element(given, found=False)
    controls = locator.locator(CONTROLS)
    count = min(await controls.count(), MAX_CONTROLS)
    # The nearest control is what a click on it activates: described, and judged with
    # every control around it.
    nearest = controls.last if count else locator  # document order: the nearest is last
    snapshot = parse(await nearest.aria_snapshot(mode="ai", timeout=READ_MS))
    node = snapshot[0] if snapshot else None
    role = node.role if node is not None and node.role != "text" else ""
    name = unquote(f'"{node.name}"') if node is not None and node.name else ""
    label = await _label(locator) if role in FIELD_ROLES else ""
    judged = [locator, *(controls.nth(-1 - i) for i in range(count))]
    judged += [control for each in judged[1:] for control in await _labelled(each)]
    words = [name, label]
    submits = False
    for each in judged:
        if await each.count() != 1:  # a label naming no element
            continue
        words.extend(await _words(each))
        submits = submits or await _in_form(each, SUBMITTER)
    enter = await _in_form(locator, ENTER_FIELD)
    text = "" if role in FIELD_ROLES else await nearest.inner_text(timeout=READ_MS)
    return Element(
        given,
        role=role,
        name=name,
        label=label,
        text=text.strip(),
        words=tuple(w for w in words if w),
        submits=submits,
        enter_submits=enter or submits,
    )


async def _words(locator: Locator) -> list[str]:
    """Everything a page can name an element by: its text, value and naming attributes.

    A select's text is every option it offers: what it says is the option chosen (its value).
    """
    words = []
    if not await _matches(locator, ":scope:is(select)"):
        words += [
            await locator.inner_text(timeout=READ_MS),
            await locator.text_content(timeout=READ_MS) or "",
        ]
    password = await _matches(locator, PASSWORD)  # a password's value is never read
    for attribute in ("aria-label", "title", "alt", *(() if password else ("value",))):
        words.append(await locator.get_attribute(attribute, timeout=READ_MS) or "")
    if not password:
        with contextlib.suppress(PlaywrightError):  # not a field: it has no value
            words.append(await locator.input_value(timeout=READ_MS))
    return words


async def _labelled(locator: Locator) -> list[Locator]:
    """What a click on a <label> clicks too: the element it names, or the field inside it."""
    if not await _matches(locator, ":scope:is(label)"):
        return []
    named = await locator.get_attribute("for", timeout=READ_MS)
    if named:
        return [_in_document(locator, f"*[@id={_xpath_string(named)}]").first]
    return [locator.locator(LABELLED)]


async def _label(locator: Locator) -> str:
    """A field's <label>: the one naming its id, or the one around it."""
    element_id = await locator.get_attribute("id", timeout=READ_MS)
    candidates = [locator.locator(LABEL_OF)]
    if element_id:
        candidates.insert(0, _in_document(locator, f"label[@for={_xpath_string(element_id)}]"))
    for label in candidates:
        if await label.count() >= 1:
            return " ".join((await label.first.inner_text(timeout=READ_MS)).split())
    return ""


def _in_document(locator: Locator, xpath: str) -> Locator:
    """``//xpath`` in the element's document (from its root: a chained "//" searches below)."""
    return locator.locator("xpath=ancestor-or-self::*[last()]").locator(f"xpath=//{xpath}")


async def _matches(locator: Locator, selector: str) -> bool:
    return await locator.locator(selector).count() > 0


async def _in_form(locator: Locator, kind: str) -> bool:
    """Whether the element is of ``kind`` (a selector) and belongs to a form."""
    return await _matches(locator, kind) and await _matches(locator, IN_FORM)


def _xpath_string(text: str) -> str:
    """An XPath string literal for any text (XPath 1.0 has no escapes: concat pieces)."""
    if "'" not in text:
        return f"'{text}'"
    if '"' not in text:
        return f'"{text}"'
    return "concat(" + ', "\'", '.join(f"'{piece}'" for piece in text.split("'")) + ")"
