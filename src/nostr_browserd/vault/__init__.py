"""The credential vault: per owner, bound to origins, sealed to the daemon's key (docs/vault.md).

``entry`` holds what an entry is (origins compared exactly, the TOTP of RFC 6238), ``keeper``
seals entries into the state store and opens them for one owner, and ``masks`` remembers what
was filled from it, so no reply shows it.  The tools are in ``tools/vault.py``.
"""
