#!/bin/sh
# The reference deployment's secrets, each a 0600 file under deploy/secrets/: the daemon's key
# (the bunker's only), the bunker's pairing secret, PostgreSQL's password and the workers'
# pgpass line for it.  An existing file is kept: run it again after losing one, not to rotate.
set -eu
dir="${1:-$(dirname "$0")/secrets}"
umask 077
mkdir -p "$dir"
random_hex() { od -An -N"$1" -tx1 /dev/urandom | tr -d ' \n'; }
make_secret() {  # name, content
    [ -e "$dir/$1" ] && return 0
    printf '%s\n' "$2" > "$dir/$1.new" && mv "$dir/$1.new" "$dir/$1"
    echo "wrote $dir/$1"
}
make_secret daemon_key "$(random_hex 32)"
make_secret bunker_secret "$(random_hex 16)"
make_secret postgres_password "$(random_hex 24)"
make_secret pgpass "postgres:5432:nostr_browserd:nostr_browserd:$(cat "$dir/postgres_password")"
