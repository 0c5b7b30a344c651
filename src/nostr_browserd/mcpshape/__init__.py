"""How the registry's tools and the protocol's responses look in MCP.

Shared by both MCP servers: the stdio/HTTP one (``mcp/``, above the daemon) and the daemon's
own ContextVM server (``contextvm/``, below it), so a tool lists and answers the same way
whichever carries it.  Pure: the registry and the MCP types, no transport.
"""
