# The README's two commands: `make demo` (the main job) and `make test` (the whole suite).
# Each bootstraps what it needs on a fresh Debian / Raspberry Pi OS machine.
.PHONY: demo test lint typecheck layers pytest bootstrap install docs lock clean

VENV := .venv/bin

bootstrap:
	@scripts/bootstrap.sh dev

demo: bootstrap
	$(VENV)/robot-face demo

test: bootstrap lint typecheck layers pytest

lint:
	$(VENV)/ruff check .
	$(VENV)/ruff format --check .

typecheck:
	$(VENV)/mypy

# The layers between and inside the packages (import-linter contracts in pyproject.toml) and no
# import cycles anywhere (tests/test_import_cycles.py, also part of pytest).
layers:
	$(VENV)/lint-imports
	$(VENV)/pytest -q -p no:cacheprovider tests/test_import_cycles.py

# Two workers, as the 2-core machines CI and a Pi have (~8.5 min of pytest; one process takes ~18, the
# real-time daemon conversations waiting most of it). More workers than cores load the real-time tests
# past what they hold: PYTEST_WORKERS=0 runs everything in one process. The full duplex end-to-end
# tests (marker "alone") then run by themselves: a device has its cores to itself, and beside another
# worker's Whisper the simulated room's timing jitters, the canceller re-converges and WebRTC's
# suppressor takes more of the user's words said over the reply (tests/e2e/test_barge_in.py).
PYTEST_WORKERS ?= 2
pytest:
	$(VENV)/pytest -q -p no:cacheprovider -n $(PYTEST_WORKERS) --dist worksteal -m "not alone"
	$(VENV)/pytest -q -p no:cacheprovider -m alone

docs: bootstrap
	$(VENV)/robot-face config > systemd/config.example.toml
	$(VENV)/robot-face schema --docs docs

# The lock files (docs/deploy.md, "The lock files"): needs uv; LOCK_ARGS="--upgrade-package NAME".
UV ?= uv
LOCK_ARGS ?=
lock:
	$(UV) pip compile pyproject.toml --extra dev --universal --python-version 3.11 --generate-hashes -q -c requirements/lock-constraints.txt $(LOCK_ARGS) -o requirements/lock.txt
	$(UV) pip compile pyproject.toml --extra pi --universal --python-version 3.11 --generate-hashes -q -c requirements/lock-constraints.txt $(LOCK_ARGS) -o requirements/lock-pi.txt

install:
	sudo scripts/install-pi.sh

clean:
	rm -rf .venv .pytest_cache .mypy_cache .ruff_cache
