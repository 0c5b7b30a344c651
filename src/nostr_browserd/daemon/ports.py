"""The daemon's default loopback ports, apart from the config's models.

The CLI's parser names them in its help before any config is loaded: ``nostr-browserd run``
loads the config (pydantic, every section's model) beside Playwright's start (``cli.run``).
"""

DEFAULT_LOCAL_PORT = 17777
DEFAULT_EMBEDDED_RELAY_PORT = 17778
