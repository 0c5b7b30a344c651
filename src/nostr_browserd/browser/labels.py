"""Numbers from the picture: ``click 3`` acts on label 3 of the tab's last annotated screenshot.

A person looking at an annotated screenshot on a phone types the number they see.  A bare
number in place of a selector is unambiguous (a CSS selector never starts with a digit), and
it means that label only while the tab still shows the document the picture was taken of:
once the tab has navigated, the number is refused with a message saying so, since the same
number may now sit on another element.

The numbers are drawn here, onto the PNG, never into the page: a label in the page's DOM is
the page's to restyle, move or renumber before the capture (a "1" on "Cancel order" while
``click 1`` pays).  Which element a number means is the daemon's own table (number → ref,
with the role and name the daemon read), and a reply that acts on a number repeats them, so
the person can check it against what they meant.
"""

from __future__ import annotations

import io
from dataclasses import dataclass

from ..errors import BrowserdError, ErrorCode
from .target import quoted

RETAKE = "send screenshot --annotate for a new picture, and use its numbers"
COLOUR = (225, 29, 72)  # the outline and the tag behind the number (#e11d48)
TAG_PX = 14  # the tag's height in CSS pixels; its number is 11 px bold-ish text

Box = tuple[float, float, float, float]  # x, y, width, height in CSS pixels of the viewport


@dataclass(frozen=True)
class Label:
    """One number of the picture: the ref it stands for, and its role and name then."""

    n: int
    ref: str  # ``e5``, without the @
    role: str
    name: str

    def describe(self) -> str:
        """``3 = button "Pay 499 EUR" (@e5)``: what the number meant in the picture."""
        named = f" {quoted(self.name)}" if self.name else ""
        return f"{self.n} = {self.role}{named} (@{self.ref})"


@dataclass(eq=False)
class Labels:
    """The numbers of a tab's last annotated screenshot, and whether its document is current."""

    numbers: dict[int, Label]
    current: bool = True


def is_label(selector: str | None) -> bool:
    """Whether a selector is a bare number: a label of the picture, not CSS."""
    return selector is not None and selector.isdigit()


def label_of(labels: Labels | None, selector: str) -> Label:
    """The label ``selector`` stands for; a coded error saying why there is none."""
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
    label = labels.numbers.get(int(selector))
    if label is None:
        top = max(labels.numbers, default=0)
        raise BrowserdError(
            ErrorCode.ELEMENT_NOT_FOUND,
            f"The annotated screenshot has no label {selector} (it has 1 to {top}).",
        )
    return label


def draw(png: bytes, boxes: list[tuple[int, Box]], viewport_width: float) -> bytes:
    """``png`` with each box outlined and its number on a tag above its top left corner.

    The picture may be in device pixels (a phone's 3x): boxes are scaled by its width over
    the viewport's.  A tag that would leave the picture is kept inside it.
    """
    from PIL import Image, ImageDraw, ImageFont  # here: the daemon starts without Pillow

    image = Image.open(io.BytesIO(png)).convert("RGB")
    scale = image.width / viewport_width if viewport_width > 0 else 1.0
    pen = ImageDraw.Draw(image)
    font = ImageFont.load_default(size=round(11 * scale))
    tag_h, line = TAG_PX * scale, max(1, round(2 * scale))
    for n, (x, y, w, h) in boxes:
        left, top, right, bottom = x * scale, y * scale, (x + w) * scale, (y + h) * scale
        pen.rectangle((left, top, right - 1, bottom - 1), outline=COLOUR, width=line)
        text = str(n)
        tag_w = pen.textlength(text, font=font) + 6 * scale
        tag_x = min(max(0.0, left - 2 * scale), image.width - tag_w)
        tag_y = top - tag_h - 2 * scale if top >= tag_h + 2 * scale else top
        pen.rectangle((tag_x, tag_y, tag_x + tag_w, tag_y + tag_h), fill=COLOUR)
        pen.text((tag_x + 3 * scale, tag_y + tag_h / 2), text, fill="white", font=font, anchor="lm")
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()
