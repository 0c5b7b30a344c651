"""Ways in: each module turns one kind of login into a Signer; ``manager`` holds the current one.

nsec (key string, file, env, systemd credential) · seed (NIP-06) · readonly (npub) ·
bunker (NIP-46 client) · nsigner (qrexec) — and ``bunker_server``, a NIP-46 remote signer.
Imports only ``nostr/`` and ``errors``.
"""
