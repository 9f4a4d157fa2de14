# The README's two commands: `make demo` (the main job) and `make test` (the whole suite).
# Each bootstraps what it needs on a fresh Debian / Raspberry Pi OS machine.
.PHONY: demo test lint typecheck pytest bootstrap install docs clean

VENV := .venv/bin

bootstrap:
	@scripts/bootstrap.sh dev

demo: bootstrap
	$(VENV)/robot-face demo

test: bootstrap lint typecheck pytest

lint:
	$(VENV)/ruff check .
	$(VENV)/ruff format --check .

typecheck:
	$(VENV)/mypy

pytest:
	$(VENV)/pytest -q -p no:cacheprovider

docs: bootstrap
	$(VENV)/robot-face config > systemd/config.example.toml
	$(VENV)/robot-face schema --docs docs

install:
	sudo scripts/install-pi.sh

clean:
	rm -rf .venv .pytest_cache .mypy_cache .ruff_cache
