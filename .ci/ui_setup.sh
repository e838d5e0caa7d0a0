#!/usr/bin/env bash
# Prepare what the browser test (tests/ui) needs: Debian's Chromium and the Node driver for it.
# Idempotent: installs Chromium only when /usr/bin/chromium is missing and reuses node_modules
# when its lock file has not changed. Playwright never downloads a browser here (we use
# playwright-core, which ships no browser, and point it at /usr/bin/chromium).
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

if [ ! -x /usr/bin/chromium ]; then
    sudo_cmd=""
    if [ "$(id -u)" != "0" ]; then sudo_cmd="sudo"; fi
    export DEBIAN_FRONTEND=noninteractive
    $sudo_cmd apt-get update
    $sudo_cmd apt-get install -y --no-install-recommends chromium
fi

if ! command -v npm >/dev/null 2>&1; then
    echo "ui_setup: npm not found; install Node.js >= 18 (needed to build the labextension)" >&2
    exit 1
fi

ui="$repo/tests/ui"
stamp="$ui/node_modules/.package-lock.json"
if [ ! -f "$stamp" ] || [ "$ui/package-lock.json" -nt "$stamp" ]; then
    (cd "$ui" && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund)
fi
