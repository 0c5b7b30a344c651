"""The MCP server: every registry tool for AI agent hosts, over stdio or Streamable HTTP.

``local`` runs the browser in this process; ``remote`` carries each call as a NIP-17 direct
message, signed by the agent's key, to a daemon anywhere.  Both feed the same ``Backend``
interface, so the server (``server.py``) does not know which one runs; the listing and the
conversion of results into MCP content are ``mcpshape/``'s, shared with the daemon's
ContextVM server.
"""
