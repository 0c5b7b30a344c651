#!/usr/bin/env bash
# Set up everything nostr-browserd needs on a fresh Debian machine: Chromium from Debian,
# a virtualenv in .venv, and the package with its test and dev extras.  Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."

# Any of Debian's Chromium builds will do; the headless shell is the lightest (229 MB).
command -v chromium-headless-shell >/dev/null 2>&1 || [ -x /usr/lib/chromium/chromium ] \
  || ./scripts/apt-install.sh chromium-headless-shell

# `systemd-analyze verify` checks the unit file in the tests (part of Debian's systemd).
command -v systemd-analyze >/dev/null 2>&1 || ./scripts/apt-install.sh systemd

python=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$python" -m venv .venv
fi
if [ ! -f .venv/.installed ] || [ pyproject.toml -nt .venv/.installed ]; then
  .venv/bin/pip install -q --upgrade pip
  .venv/bin/pip install -q -e '.[test,dev]'
  touch .venv/.installed
fi

# The last nostr-sdk with a Python bunker (0.37.0) speaks the legacy NIP-04 transport: the
# tests run it as a real old signer against our bunker client.  It cannot share a venv.
# A failed install fails the setup (its interop test would skip, and the run look green); the
# half-made venv goes, so that the next setup tries again.
if [ ! -x .venv-legacy/bin/python ]; then
  "$python" -m venv .venv-legacy
  .venv-legacy/bin/pip install -q nostr-sdk==0.37.0 || {
    rm -rf .venv-legacy
    echo "setup: the legacy signer (nostr-sdk 0.37.0) could not be installed" >&2
    exit 1
  }
fi

# Independent JavaScript sides (each pinned by its package-lock.json): a NIP-46 remote signer
# the tests run our bunker client against, a phone that opens our NIP-17 file messages, and
# the official ContextVM client and server (@contextvm/sdk) for our ContextVM server and client.
# Only where Node.js is installed (.ci/run installs Debian's nodejs and npm); without it those
# tests are skipped.  With it, a failed install fails the setup.
for js in tests/nip46_js tests/phone_js tests/contextvm_js; do
  if command -v npm >/dev/null 2>&1 && [ $js/package-lock.json -nt $js/node_modules/.package-lock.json ]; then
    (cd $js && npm ci --no-audit --no-fund --loglevel=error) || {
      echo "setup: the JS side in $js could not be installed" >&2
      exit 1
    }
  fi
done
