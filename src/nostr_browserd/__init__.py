"""nostr-browserd: a headless browser driven over encrypted Nostr direct messages."""

# The one place the version is written: pyproject.toml reads it (dynamic), and so do
# --version, status, MCP and ContextVM server info, and the kind 0 profile.
__version__ = "0.2.0"
