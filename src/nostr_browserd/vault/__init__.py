"""The credential vault: per owner, bound to origins, sealed to the daemon's key (docs/vault.md).

``entry`` holds what an entry is (origins compared exactly, the TOTP of RFC 6238) and the
``Keeper`` protocol the tools reach it through; ``keeper`` seals entries into the state store
and opens them for one owner.  The tools are in ``tools/vault.py``; what they filled is masked
in replies by ``browser/masked.py``.
"""
