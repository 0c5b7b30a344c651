"""A recording's pictures: frames as they came, masks painted over secrets, captions, and the
contact sheet a phone shows at a glance.

Everything here is drawn by the daemon on the decoded picture, outside the page: the page
can neither restyle a caption nor lift a mask.
"""

from __future__ import annotations

import io
from dataclasses import dataclass, field

from PIL import Image, ImageDraw, ImageFont

Box = tuple[float, float, float, float]  # x, y, width, height in the page's CSS pixels
CAPTION_HEIGHT = 28
SHEET_COLUMNS = 3
SHEET_CELL_WIDTH = 400


@dataclass(frozen=True)
class Frame:
    """One JPEG of the screencast, when it came, and the boxes to black out on it (in CSS
    pixels of a viewport ``css_width`` wide: the picture may be scaled down from it)."""

    jpeg: bytes
    at_ms: int
    masks: tuple[Box, ...] = field(default=())
    css_width: float = 0.0

    def image(self) -> Image.Image:
        """The decoded picture, every masked box painted over."""
        picture = Image.open(io.BytesIO(self.jpeg)).convert("RGB")
        if self.masks and self.css_width > 0:
            scale = picture.width / self.css_width
            draw = ImageDraw.Draw(picture)
            for x, y, w, h in self.masks:
                box = ((x - 2) * scale, (y - 2) * scale, (x + w + 2) * scale, (y + h + 2) * scale)
                draw.rectangle(box, fill=(40, 40, 40))
        return picture


@dataclass(frozen=True)
class Caption:
    """What a step did, shown on the frames that follow it."""

    text: str
    until_ms: int


def _font(size: int) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    return ImageFont.load_default(size=size)


def caption_bar(picture: Image.Image, text: str) -> Image.Image:
    """``picture`` with ``text`` on a dark bar along its bottom edge."""
    picture = picture.copy()
    width, height = picture.size
    draw = ImageDraw.Draw(picture)
    top = height - CAPTION_HEIGHT
    draw.rectangle((0, top, width, height), fill=(0, 0, 0))
    draw.text((8, top + 5), _fit(draw, text, width - 16), fill=(255, 255, 255), font=_font(16))
    return picture


def _fit(draw: ImageDraw.ImageDraw, text: str, width: int) -> str:
    """``text`` cut with an ellipsis so that it fits ``width`` pixels."""
    font = _font(16)
    if draw.textlength(text, font=font) <= width:
        return text
    while text and draw.textlength(text + "…", font=font) > width:
        text = text[:-1]
    return text + "…"


def contact_sheet(steps: list[tuple[Frame, str]]) -> bytes:
    """A PNG grid: one cell per step, its picture and its caption (``3 · click …``)."""
    if not steps:
        raise ValueError("a contact sheet needs at least one step")
    first = steps[0][0].image()
    cell_height = round(first.height * SHEET_CELL_WIDTH / first.width)
    columns = min(SHEET_COLUMNS, len(steps))
    rows = -(-len(steps) // columns)
    sheet = Image.new("RGB", (columns * SHEET_CELL_WIDTH, rows * (cell_height + CAPTION_HEIGHT)))
    for n, (frame, text) in enumerate(steps):
        cell = frame.image().resize((SHEET_CELL_WIDTH, cell_height))
        cell = caption_bar(_padded(cell), text)
        column, row = n % columns, n // columns
        sheet.paste(cell, (column * SHEET_CELL_WIDTH, row * (cell_height + CAPTION_HEIGHT)))
    out = io.BytesIO()
    sheet.save(out, "PNG", optimize=True)
    return out.getvalue()


def _padded(cell: Image.Image) -> Image.Image:
    """Room under the picture for its caption, so the caption hides none of it."""
    padded = Image.new("RGB", (cell.width, cell.height + CAPTION_HEIGHT), (0, 0, 0))
    padded.paste(cell, (0, 0))
    return padded
