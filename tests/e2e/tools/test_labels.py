"""The numbers of an annotated screenshot are the daemon's: a page cannot redraw or move them.

A hostile shop rewrites whatever is added to it (labels drawn into the page): it swaps the
numbers "1" and "2", or swaps its buttons' places.  In the PNG, the tag of each number must
sit on the element the legend gives that number, read off the pixels: the button under an
outline is known by its colour, the number on a tag by how much of it is drawn (a "1" has
fewer white pixels than a "2").  ``click N`` then names what N meant.
"""

import base64
import io

import pytest
from PIL import Image

from nostr_browserd.daemon.consent import target_of

GREEN, BLUE = (0, 160, 0), (0, 0, 255)
BUTTONS = {GREEN: "Cancel order", BLUE: "Pay 499 EUR"}
SLOTS = (60, 400)  # the buttons' two places (left, CSS px); both are 100 px down, 200 x 80
TOP, WIDTH, HEIGHT = 100, 200, 80


def near(pixel: tuple[int, ...], colour: tuple[int, int, int], slack: int = 40) -> bool:
    return all(abs(a - b) <= slack for a, b in zip(pixel[:3], colour, strict=True))


def numbers_in_picture(png: bytes, scale: float) -> dict[str, int]:
    """For each button the picture shows outlined, how many white pixels its tag holds.

    A button is known by its colour, inside its outline and left of its words."""
    image = Image.open(io.BytesIO(png)).convert("RGB")
    found: dict[str, int] = {}
    for left in SLOTS:
        x, y, w, h = (round(v * scale) for v in (left, TOP, WIDTH, HEIGHT))
        colour = next(c for c in BUTTONS if near(image.getpixel((x + w // 20, y + h // 2)), c))
        area = [
            (i, j)
            for i in range(x - round(4 * scale), x + round(40 * scale))
            for j in range(y - round(20 * scale), y)
        ]
        red = [(i, j) for i, j in area if near(image.getpixel((i, j)), (225, 29, 72))]
        assert len(red) > 20, f"no tag over {BUTTONS[colour]}"
        xs, ys = [i for i, _ in red], [j for _, j in red]
        tag = image.crop((min(xs), min(ys), max(xs) + 1, max(ys) + 1))
        found[BUTTONS[colour]] = sum(
            min(tag.getpixel((i, j))) > 160 for i in range(tag.width) for j in range(tag.height)
        )
    return found


@pytest.mark.parametrize("attack", ["numbers", "order"])
async def test_a_page_cannot_move_or_renumber_the_labels(call, message, session, site_url, attack):
    await call(f"open {site_url}/relabel.html?attack={attack}")
    shot = (await call("screenshot_annotated"))["data"]
    legend = {e["n"]: e for e in shot["legend"]}
    assert {(e["role"], e["name"]) for e in legend.values()} == {
        ("button", "Cancel order"),
        ("button", "Pay 499 EUR"),
    }
    scale = (
        Image.open(io.BytesIO(base64.b64decode(shot["base64"]))).width
        / (await call("eval innerWidth"))["data"]["result"]
    )
    white = numbers_in_picture(base64.b64decode(shot["base64"]), scale)
    one, two = sorted(white, key=white.get)  # a "1" is drawn with fewer pixels than a "2"
    assert (legend[1]["name"], legend[2]["name"]) == (one, two), "the picture's 1 is legend 1"

    # An approver, and the reply to a number, read what the number meant; it is what acts.
    pay = next(n for n, e in legend.items() if e["name"] == "Pay 499 EUR")
    approver_sees = await target_of(session, "click", {"selector": str(pay)})
    assert approver_sees is not None
    assert approver_sees.describe().startswith(
        f'button "Pay 499 EUR" (label {pay} = button "Pay 499 EUR" (@'
    )
    reply = await message(f"click {pay}")
    assert f'label: {pay} = button "Pay 499 EUR" (@' in reply
    assert (await call("get text #out"))["data"]["text"] == "paid 499 EUR"
