#!/usr/bin/env bash
# Set up everything nostr-browserd needs on a fresh Debian machine: Chromium from Debian,
# a virtualenv in .venv with exactly what uv.lock pins, every extra included.  Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."

# Any of Debian's Chromium builds will do; the headless shell is the lightest (229 MB).
command -v chromium-headless-shell >/dev/null 2>&1 || [ -x /usr/lib/chromium/chromium ] \
  || ./scripts/apt-install.sh chromium-headless-shell

# `systemd-analyze verify` checks the unit file in the tests (part of Debian's systemd).
command -v systemd-analyze >/dev/null 2>&1 || ./scripts/apt-install.sh systemd

# Every Python package comes from uv.lock (hashes included), installed by the pinned uv.
./scripts/setup-uv.sh
python=${PYTHON:-python3}
export UV_PYTHON_DOWNLOADS=never
if [ ! -f .venv/.installed ] || [ uv.lock -nt .venv/.installed ] \
   || [ pyproject.toml -nt .venv/.installed ]; then
  # --frozen: exactly the lock, never a fresh resolution (make lock moves versions);
  # every extra, so that the tests, lint and bench share one environment.  Compiled once here
  # (about 10 s): where nothing may write __pycache__ (PYTHONDONTWRITEBYTECODE, a read-only
  # venv) every start would compile its imports again, 0.7 s of CPU.
  .uv/bin/uv sync -q --frozen --all-extras --compile-bytecode --python "$python"
  touch .venv/.installed
fi

# The last nostr-sdk with a Python bunker (0.37.0) speaks the legacy NIP-04 transport: the
# tests run it as a real old signer against our bunker client.  It cannot share a venv.
# A failed install fails the setup (its interop test would skip, and the run look green); the
# half-made venv goes, so that the next setup tries again.
if [ ! -x .venv-legacy/bin/python ]; then
  { .uv/bin/uv venv -q .venv-legacy --python "$python" \
    && .uv/bin/uv pip install -q --python .venv-legacy/bin/python --require-hashes \
         -r scripts/pins/legacy-signer.txt; } || {
    rm -rf .venv-legacy
    echo "setup: the legacy signer (nostr-sdk 0.37.0) could not be installed" >&2
    exit 1
  }
fi

# Independent JavaScript sides (each pinned by its package-lock.json): a NIP-46 remote signer
# the tests run our bunker client against, a phone that opens our NIP-17 file messages,
# the official ContextVM client and server (@contextvm/sdk) for our ContextVM server and client,
# and nostr-tools writing NIP-44's extended length prefix (messages over 65,535 bytes).
# Only where Node.js is installed (.ci/run installs Debian's nodejs and npm); without it those
# tests are skipped.  With it, a failed install fails the setup.
for js in tests/nip46_js tests/phone_js tests/contextvm_js tests/nip44_js; do
  if command -v npm >/dev/null 2>&1 && [ $js/package-lock.json -nt $js/node_modules/.package-lock.json ]; then
    (cd $js && npm ci --no-audit --no-fund --loglevel=error) || {
      echo "setup: the JS side in $js could not be installed" >&2
      exit 1
    }
  fi
done
