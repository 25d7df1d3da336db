#!/usr/bin/env bash
# Installs everything iwr-bench needs on a fresh Debian machine: apt packages (Chromium, fonts),
# a virtualenv in .venv and the pinned Python packages. Quick when nothing changed.
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(chromium fonts-dejavu-core fonts-liberation fonts-noto-color-emoji)
VENV=.venv
STAMP="$VENV/.setup-stamp"

say() { printf 'setup: %s\n' "$*"; }
die() { printf 'setup: %s\n' "$*" >&2; exit 1; }

missing=()
for pkg in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if ((${#missing[@]})); then
  command -v apt-get >/dev/null || die "needs ${missing[*]} but apt-get is not available; install them with your package manager and rerun"
  if [[ $(id -u) -ne 0 ]]; then
    command -v sudo >/dev/null || die "needs ${missing[*]}; run as root or install them first: apt-get install -y ${missing[*]}"
    SUDO=sudo
  else
    SUDO=
  fi
  say "installing ${missing[*]} with apt-get"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

PY=${PYTHON:-$(command -v python3.11 || true)}
[[ -n "$PY" ]] || die "needs Python 3.11 (python3.11 not found); set PYTHON=/path/to/python3.11"

if [[ ! -x "$VENV/bin/python" ]]; then
  say "creating $VENV"
  "$PY" -m venv "$VENV"
fi

# The real-app suite's npm packages (pinned, a few MB), so that building it later works offline.
fetch_real_apps() {
  ls "${IWR_BENCH_CACHE_DIR:-$HOME/.cache/iwr-bench}"/real-apps/npm/*/.verified >/dev/null 2>&1 && return 0
  say "downloading the real-app suite's npm packages"
  "$VENV/bin/python" -m iwr_bench.suites.real_apps --fetch-only ||
    say "warning: could not download them now (make real-suite tries again)"
}

want=$(cat pyproject.toml requirements.lock | sha256sum | cut -d' ' -f1)
if [[ -f "$STAMP" && "$(cat "$STAMP")" == "$want" ]] && "$VENV/bin/python" -c "import iwr_bench" 2>/dev/null; then
  fetch_real_apps
  exit 0
fi
say "installing Python packages (one resolver pass, pinned by requirements.lock)"
"$VENV/bin/python" -m pip install -q --no-compile --upgrade pip setuptools wheel
# torch comes as the CPU wheel (torch==2.13.0+cpu); see README for GPU machines.
# --no-compile: pip would byte-compile all 27,000 modules of the pinned set, one at a time (100 of
# the 180 s of a fresh set-up); the commands and tests import a few thousand of them.
"$VENV/bin/python" -m pip install -q --no-compile -c requirements.lock -e ".[dev]"
say "byte-compiling what iwr-bench and its tests import"
# Importing them writes their .pyc files (even where PYTHONDONTWRITEBYTECODE is set for everything
# else); a module left out is compiled from source when a process imports it, as before pip's pass.
env -u PYTHONDONTWRITEBYTECODE "$VENV/bin/python" scripts/warm_imports.py
echo "$want" > "$STAMP"
fetch_real_apps
say "done"
