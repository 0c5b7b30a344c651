"""The config's error, apart from the config's models.

The CLI catches it around every command, ``run`` too, which loads the config (pydantic,
every section's model) only beside Playwright's start (``cli.run``).
"""


class ConfigError(ValueError):
    """A configuration problem, phrased so the operator knows which key to fix."""
