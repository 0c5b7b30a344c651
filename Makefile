# The two commands a newcomer needs: `make run` and `make test`.  Both set up first.
.PHONY: setup run test fuzz bench lint

setup:
	@./scripts/setup.sh

# Chromium refuses its sandbox to root, and the daemon then refuses to start unless told: as
# root, `make run` tells it (and says so).  Run as a user, or under the systemd unit, to keep it.
run: setup
	@if [ "$$(id -u)" = 0 ] && [ -z "$$NOSTR_BROWSERD_BROWSER_SANDBOX" ]; then \
	  echo "make run: running as root, so Chromium runs WITHOUT its sandbox" \
	       "(NOSTR_BROWSERD_BROWSER_SANDBOX=false)"; \
	  NOSTR_BROWSERD_BROWSER_SANDBOX=false .venv/bin/nostr-browserd run $(ARGS); \
	else .venv/bin/nostr-browserd run $(ARGS); fi

test: setup
	.venv/bin/pytest -q

# Every decoder of outside input at 100,000 examples per target (make test runs 10,000).
fuzz: setup
	FUZZ_EXAMPLES=100000 .venv/bin/pytest -q --timeout=0 tests/fuzz

# The snapshot benchmark reads the Python documentation (Debian's python3.11-doc).
bench: setup
	@[ -d /usr/share/doc/python3.11/html ] || ./scripts/apt-install.sh python3.11-doc
	@for b in bench/bench_*.py; do echo "== $$b"; .venv/bin/python $$b || exit 1; done

lint: setup
	.venv/bin/ruff check .
	.venv/bin/ruff format --check .
