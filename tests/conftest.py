"""Fixtures live in tests/fixtures/, one module per kind of real part (relay, browser, site)."""

from tests.fixtures.browser import *  # noqa: F403
from tests.fixtures.relays import *  # noqa: F403
from tests.fixtures.site import *  # noqa: F403
