"""The DM transport both ends use: the daemon's inbox and outbox, and a client's conversation."""
