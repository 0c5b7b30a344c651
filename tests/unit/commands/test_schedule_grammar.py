"""The text forms of monitors and schedules, as a phone types them."""

from __future__ import annotations

import pytest

from nostr_browserd.catalog import REGISTRY
from nostr_browserd.commands.protocol import parse_request
from nostr_browserd.errors import BrowserdError


@pytest.mark.parametrize(
    ("line", "params"),
    [
        ("schedule add every 15m screenshot", {"when": "every 15m", "command": "screenshot"}),
        (
            'schedule add "daily 08:00" ask what is new on "my" bank',
            {"when": "daily 08:00", "command": 'ask what is new on "my" bank'},
        ),
        (
            "schedule add weekdays 07:30 snapshot -i --tz Europe/Paris",
            {"when": "weekdays 07:30", "command": "snapshot -i", "tz": "Europe/Paris"},
        ),
        (
            'schedule add "0 8 * * 1-5" batch open https://a.example; snapshot',
            {"when": "0 8 * * 1-5", "command": "batch open https://a.example; snapshot"},
        ),
    ],
)
def test_schedule_add(line, params):
    request = parse_request(line, REGISTRY)
    assert request.tool == "schedule_add"
    _, model = REGISTRY.validate(request.tool, request.params)
    assert model.model_dump(exclude_defaults=True) == params


def test_monitor_add():
    line = 'monitor add https://shop.example/item .price --every 2h --missing "Sold out"'
    request = parse_request(line, REGISTRY)
    assert (request.tool, request.params) == (
        "monitor_add",
        {
            "url": "https://shop.example/item",
            "selector": ".price",
            "every": "2h",
            "missing": "Sold out",
        },
    )
    both = parse_request("monitor add https://a.example --contains a --missing b", REGISTRY)
    with pytest.raises(BrowserdError, match="not both"):
        REGISTRY.validate(both.tool, both.params)
    assert parse_request("monitor remove m3", REGISTRY).params == {"id": "m3"}
    bad = parse_request("monitor remove s3", REGISTRY)
    with pytest.raises(BrowserdError, match="id"):
        REGISTRY.validate(bad.tool, bad.params)
