"""nostr-browserd: a headless browser driven over encrypted Nostr direct messages."""

__version__ = "0.1.0"
