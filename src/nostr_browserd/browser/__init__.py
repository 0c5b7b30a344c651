"""The browser machinery: the Playwright session, its tabs, snapshots and refs, checks,
page logs, paths and URL rules.  It knows nothing of tools or Nostr."""
