"""Numbers from the picture: ``click 3`` acts on label 3 of the tab's last annotated screenshot.

A person looking at an annotated screenshot on a phone types the number they see.  A bare
number in place of a selector is unambiguous (a CSS selector never starts with a digit), and
it means that label only while the tab still shows the document the picture was taken of:
once the tab has navigated, the number is refused with a message saying so, since the same
number may now sit on another element.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import BrowserdError, ErrorCode

RETAKE = "send screenshot --annotate for a new picture, and use its numbers"


@dataclass(eq=False)
class Labels:
    """The numbers of a tab's last annotated screenshot, and whether its document is current."""

    refs: dict[int, str]  # label -> ref (``e5``)
    current: bool = True


def is_label(selector: str | None) -> bool:
    """Whether a selector is a bare number: a label of the picture, not CSS."""
    return selector is not None and selector.isdigit()


def label_ref(labels: Labels | None, selector: str) -> str:
    """The ref label ``selector`` stands for; a coded error saying why there is none."""
    if labels is None:
        raise BrowserdError(
            ErrorCode.ELEMENT_NOT_FOUND,
            f"{selector} is a label of an annotated screenshot, and this tab has none: {RETAKE}.",
        )
    if not labels.current:
        raise BrowserdError(
            ErrorCode.STALE_REF,
            f"The page changed since the annotated screenshot, so label {selector} may be on"
            f" another element now: {RETAKE}.",
        )
    ref = labels.refs.get(int(selector))
    if ref is None:
        top = max(labels.refs, default=0)
        raise BrowserdError(
            ErrorCode.ELEMENT_NOT_FOUND,
            f"The annotated screenshot has no label {selector} (it has 1 to {top}).",
        )
    return ref
