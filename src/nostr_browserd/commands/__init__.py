"""The command layer: the registry and catalog, params, the text grammar, the protocol
and its renderings."""
