"""``redact.scrub``: a value the vault filled is masked however a page spelled it back."""

from __future__ import annotations

from nostr_browserd.redact import MASK, scrub

SECRET = 'p&ss "w<rd"/+1'


def test_every_spelling_of_a_filled_value_is_masked_and_pictures_stay_whole():
    reply = {
        "text": f"hint: {SECRET}!",
        "html": '<input value="p&amp;ss &quot;w&lt;rd&quot;/+1">',
        "url": "https://x.example/?p=p%26ss+%22w%3Crd%22%2F%2B1",
        "script": 'let p = "p&ss \\"w<rd\\"/+1"',
        "steps": [{"outcome": SECRET}],
        SECRET: "a key too",
        "base64": SECRET,  # a picture's bytes: masked apart, never rewritten
    }
    out = scrub(reply, frozenset({SECRET}))
    assert out["text"] == f"hint: {MASK}!" and out["steps"] == [{"outcome": MASK}]
    assert out["html"] == f'<input value="{MASK}">'
    assert out["url"] == f"https://x.example/?p={MASK}" and out["script"] == f'let p = "{MASK}"'
    assert out[MASK] == "a key too" and out["base64"] == SECRET
    assert scrub(reply, frozenset()) is reply
