"""``nostr-browserd``'s subcommands: each parses its argv into typed options, and nothing
below this package sees an ``argparse.Namespace``."""
