"""Reading the page: when a password could be on show, so its values are looked up."""

from nostr_browserd.browser.snapshot.take import SHOWS_VALUE

from .samples import QUOTED_RAW


def test_a_password_in_a_quoted_line_is_looked_up():
    assert SHOWS_VALUE.search(QUOTED_RAW.replace('"key: value"', ""))
