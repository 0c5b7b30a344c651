"""ContextVM: the daemon as an MCP server over Nostr, for the same allow-list as its DMs."""
