# The two commands a newcomer needs: `make run` and `make test`.  Both set up first.
.PHONY: setup run test test-fast fuzz bench lint lock install uninstall

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

# The pure tests (tests/unit: no browser, no relay, no database) for the edit-test loop.
test-fast: setup
	.venv/bin/pytest -q tests/unit

# Every decoder of outside input at 100,000 examples per target (make test runs 10,000).
fuzz: setup
	FUZZ_EXAMPLES=100000 .venv/bin/pytest -q --timeout=0 tests/fuzz

# One run, one report: bench/report.md and its charts, ours against Playwright and the peers
# (pinned in bench/package-lock.json) on Python's docs (python3.11-doc) and a Django admin.
bench: setup
	@[ -d /usr/share/doc/python3.11/html ] || ./scripts/apt-install.sh python3.11-doc
	@command -v npm >/dev/null 2>&1 || ./scripts/apt-install.sh nodejs npm
	@[ bench/node_modules/.package-lock.json -nt bench/package-lock.json ] \
	  || (cd bench && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
	@# agent-browser's install script (not run: --ignore-scripts) would mark its binary executable
	@chmod +x bench/node_modules/agent-browser/bin/agent-browser-linux-*
	.venv/bin/python -m bench.run

# ruff, mypy (strict: pyproject.toml [tool.mypy]), then the import contracts in pyproject.toml
# (which room may import which).
lint: setup
	.venv/bin/ruff check .
	.venv/bin/ruff format --check .
	.venv/bin/mypy
	.venv/bin/lint-imports

# The one way versions move: resolve again within pyproject.toml's bounds, upgrading every
# package, and install the new lock.  Commit uv.lock on its own, after `make test` passed on it.
lock: setup
	UV_PYTHON_DOWNLOADS=never .uv/bin/uv lock --upgrade
	@rm -f .venv/.installed
	@./scripts/setup.sh

# As root: the systemd service from the lock (docs/deployment.md).  DESTDIR=/a/root stages it
# there instead.  uninstall keeps /etc/nostr-browserd and the state.
install:
	@DESTDIR="$(DESTDIR)" ./scripts/install.sh install

uninstall:
	@DESTDIR="$(DESTDIR)" ./scripts/install.sh uninstall
