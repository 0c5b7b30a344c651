"""A picture's numbers (browser/labels.py): drawn onto the PNG, and read back by number."""

import io

import pytest
from PIL import Image

from nostr_browserd.browser.labels import COLOUR, Label, Labels, draw, label_of
from nostr_browserd.errors import BrowserdError, ErrorCode


def blank(width: int, height: int) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (width, height), "white").save(out, format="PNG")
    return out.getvalue()


@pytest.mark.parametrize("scale", [1, 3])  # a desktop, and a phone's device pixels
def test_numbers_are_drawn_on_their_boxes(scale):
    png = draw(blank(400 * scale, 300 * scale), [(1, (50, 100, 120, 40))], viewport_width=400)
    image = Image.open(io.BytesIO(png)).convert("RGB")
    assert image.size == (400 * scale, 300 * scale)
    # the outline runs along the box, the inside is the page's
    assert image.getpixel((50 * scale, 120 * scale)) == COLOUR
    assert image.getpixel((169 * scale, 120 * scale)) == COLOUR
    assert image.getpixel((110 * scale, 120 * scale)) == (255, 255, 255)
    # the tag sits above the top left corner, with a white number on it
    tag = image.crop((48 * scale, 84 * scale, 70 * scale, 98 * scale))
    colours = [tag.getpixel((x, y)) for x in range(tag.width) for y in range(tag.height)]
    assert COLOUR in colours and any(min(c) > 200 for c in colours)


def test_a_tag_at_the_top_stays_in_the_picture():
    png = draw(blank(200, 100), [(7, (0, 0, 50, 30))], viewport_width=200)
    image = Image.open(io.BytesIO(png)).convert("RGB")
    assert image.getpixel((4, 4)) == COLOUR, "the tag moves inside the box"


def test_a_number_means_its_label_while_the_document_is_current():
    labels = Labels({3: Label(3, "e5", "button", 'Pay "now"')})
    assert label_of(labels, "3").ref == "e5"
    assert label_of(labels, "3").describe() == '3 = button "Pay \\"now\\"" (@e5)'
    with pytest.raises(BrowserdError) as missing:
        label_of(labels, "4")
    assert missing.value.code is ErrorCode.ELEMENT_NOT_FOUND and "1 to 3" in str(missing.value)
    labels.current = False
    with pytest.raises(BrowserdError) as stale:
        label_of(labels, "3")
    assert stale.value.code is ErrorCode.STALE_REF
    with pytest.raises(BrowserdError) as none:
        label_of(None, "1")
    assert none.value.code is ErrorCode.ELEMENT_NOT_FOUND
