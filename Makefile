# The two commands a newcomer needs: `make run` and `make test`.  Both set up first.
.PHONY: setup run test bench lint

setup:
	@./scripts/setup.sh

run: setup
	.venv/bin/nostr-browserd run $(ARGS)

test: setup
	.venv/bin/pytest -q

bench: setup
	.venv/bin/python -m bench

lint: setup
	.venv/bin/ruff check .
