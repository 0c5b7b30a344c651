#!/usr/bin/env bash
# uv, the one pin outside uv.lock (scripts/pins/uv.txt, with its hashes), in a venv of its own:
# .uv/bin/uv.  A venv keeps Debian's own Python untouched (PEP 668); Debian's python3 needs
# python3-venv for it.  Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-python3}
"$python" -c 'import ensurepip' 2>/dev/null || ./scripts/apt-install.sh python3-venv
if [ ! -x .uv/bin/uv ] || [ scripts/pins/uv.txt -nt .uv/bin/uv ]; then
  rm -rf .uv
  "$python" -m venv .uv
  .uv/bin/pip install -q --disable-pip-version-check --require-hashes -r scripts/pins/uv.txt
  touch .uv/bin/uv
fi
