"""The first loop an agent runs: open, snapshot, act by ref, read back."""

import re


async def test_open_snapshot_fill_click(call, site_url):
    opened = await call(f"open {site_url}/form.html")
    assert opened["success"], opened
    assert opened["data"]["title"] == "Form" and opened["data"]["tab"] == "t1"
    assert "snapshot" not in opened["data"]

    snap = await call("snapshot -i")
    text = snap["data"]["snapshot"]
    name_ref = re.search(r'textbox "Name" @(\w+)', text).group(1)
    send_ref = re.search(r'button "Send" @(\w+)', text).group(1)

    filled = await call(f'fill @{name_ref} "Ada Lovelace"')
    assert filled["data"]["ok"] is True

    clicked = await call(f"click @{send_ref}")
    assert clicked["data"]["verified"] is True, clicked
    got = await call("get text #out")
    assert got["data"]["text"] == "sent Ada Lovelace"
