#!/usr/bin/env bash
# `make install` / `make uninstall`: nostr-browserd as a systemd service, from uv.lock.
#
#   scripts/install.sh install     a venv at /opt/nostr-browserd (exactly the lock), the command
#                                  at /usr/local/bin/nostr-browserd (where the unit runs it),
#                                  the units, the docs, and /etc/nostr-browserd/ with the
#                                  example config and an empty 0600 key file (never overwritten)
#   scripts/install.sh uninstall   removes what install added; the config, the key and the
#                                  state (/var/lib/nostr-browserd) stay
#
# DESTDIR=/some/root puts everything under that root instead (the tests do); the venv then
# runs from there.  Running install twice changes nothing.
set -euo pipefail
cd "$(dirname "$0")/.."

action=${1:?usage: scripts/install.sh install|uninstall}
root=${DESTDIR:-}
venv=$root/opt/nostr-browserd
bin=$root/usr/local/bin/nostr-browserd
units=$root/etc/systemd/system
etc=$root/etc/nostr-browserd
doc=$root/usr/share/doc/nostr-browserd
# The unit's DynamicUser cannot read a Python under /root (ProtectHome): Debian's own, if any.
python=${PYTHON:-$(command -v /usr/bin/python3 || command -v python3)}

reload_systemd() {
  # Only on the machine itself, and only where systemd is what runs it.
  if [ -z "$root" ] && [ -d /run/systemd/system ]; then
    systemctl daemon-reload
  fi
}

install_all() {
  ./scripts/setup-uv.sh
  install -d -m 0755 "$venv" "$(dirname "$bin")" "$units/nostr-browserd@.service.d" "$doc"
  # --no-editable: the venv holds its own copy of the package, not a link to this checkout.
  # --compile-bytecode: the service's DynamicUser cannot write __pycache__ under /opt, so
  # without it every start (and every worker) would compile its imports again: 0.7 s of CPU.
  UV_PROJECT_ENVIRONMENT=$venv UV_PYTHON_DOWNLOADS=never \
    .uv/bin/uv sync -q --frozen --no-editable --no-dev --link-mode=copy --compile-bytecode \
    --python "$python"
  ln -sfn "../../../opt/nostr-browserd/bin/nostr-browserd" "$bin"
  install -C -m 0644 systemd/nostr-browserd.service "$units/nostr-browserd.service"
  install -C -m 0644 systemd/nostr-browserd.service "$units/nostr-browserd@.service"
  install -C -m 0644 systemd/nostr-browserd@.service.d/worker.conf \
    "$units/nostr-browserd@.service.d/worker.conf"
  install -C -m 0644 README.md CHANGELOG.md "$doc/"
  # The operator's files: made once, then theirs.
  install -d -m 0755 "$etc"
  [ -e "$etc/config.toml" ] || install -m 0644 systemd/config.example.toml "$etc/config.toml"
  [ -e "$etc/nsec" ] || install -m 0600 /dev/null "$etc/nsec"
  reload_systemd
  echo "installed nostr-browserd $("$venv/bin/nostr-browserd" --version | cut -d' ' -f2)" \
    "under ${root:-/}"
  echo "next: edit $etc/config.toml, write the daemon's nsec into $etc/nsec"
  echo "      (or let it make one: $bin keygen $etc/nsec), then"
  echo "      systemctl enable --now nostr-browserd"
}

uninstall_all() {
  if [ -z "$root" ] && [ -d /run/systemd/system ]; then
    systemctl disable --now nostr-browserd 2>/dev/null || true
  fi
  rm -rf "$venv" "$doc" "$units/nostr-browserd@.service.d"
  rm -f "$bin" "$units/nostr-browserd.service" "$units/nostr-browserd@.service"
  reload_systemd
  echo "uninstalled nostr-browserd from ${root:-/}; kept $etc and the state directory"
}

case $action in
  install) install_all ;;
  uninstall) uninstall_all ;;
  *) echo "usage: scripts/install.sh install|uninstall" >&2; exit 2 ;;
esac
