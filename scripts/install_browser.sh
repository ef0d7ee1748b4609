#!/usr/bin/env bash
# Install what the browser tests need, idempotently: Debian's chromium (apt) and Playwright for
# Python (pip, the project's dev extra) into a venv.
#
# Usage: scripts/install_browser.sh [VENV]   (default: .venv)
#        scripts/install_browser.sh --system-only   (chromium only: `make test` runs this beside the
#        pip installs, so apt's download and unpack overlap them)
#
# Why Debian's chromium and not `playwright install`: Playwright downloads its own browser build
# from its own hosts, which a machine that reaches only package registries cannot do. The tests
# point Playwright at /usr/bin/chromium instead (tests/browser_fixtures.py).
# Never fails `make test`: when a part cannot be installed (no root, no apt, no network) it says
# why and exits 0; the browser tests then skip with that reason (and fail under CI=true, where
# the install can run).
set -uo pipefail

SYSTEM_ONLY=0
if [[ "${1:-}" == "--system-only" ]]; then
    SYSTEM_ONLY=1
    shift
fi
VENV="${1:-.venv}"
PY="$VENV/bin/python"

if command -v chromium >/dev/null 2>&1; then
    :
elif [[ "$(id -u)" != "0" ]]; then
    echo "install_browser: chromium missing and not root: the browser tests will skip (apt-get install chromium)" >&2
elif ! command -v apt-get >/dev/null 2>&1; then
    echo "install_browser: chromium missing and no apt-get: the browser tests will skip" >&2
else
    echo "install_browser: installing Debian's chromium (apt)" >&2
    # apt's own lock serialises concurrent installs; update only when the package is unknown.
    if ! apt-cache show chromium >/dev/null 2>&1; then
        apt-get update -q >&2 || echo "install_browser: apt-get update failed" >&2
    fi
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends chromium >&2 \
        || echo "install_browser: apt-get install chromium failed: the browser tests will skip" >&2
fi

if [[ "$SYSTEM_ONLY" == "1" ]]; then
    exit 0
fi
if [[ -x "$PY" ]] && ! "$PY" -c "import playwright.sync_api" >/dev/null 2>&1; then
    echo "install_browser: installing Playwright for Python (pip)" >&2
    "$PY" -m pip install --quiet "playwright>=1.45" >&2 \
        || echo "install_browser: pip install playwright failed: the browser tests will skip" >&2
fi
exit 0
