"""The browser machinery: the pool and its endpoints, a Playwright session per owner, its tabs,
snapshots and refs, checks, page logs, paths and URL rules.  It knows nothing of tools or Nostr."""
