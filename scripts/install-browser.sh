#!/usr/bin/env bash
# Install Debian's headless-capable Chromium and its WebDriver for tests/test_app_browser.py (used by CI).
# Idempotent: does nothing when both are already installed. Needs root (or sudo) and the Debian package mirror.
set -euo pipefail

if command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1; then
    echo "install-browser: $(chromium --version 2>/dev/null || echo chromium) and chromedriver already installed"
    exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
        echo "install-browser: need root or sudo to apt-get install chromium chromium-driver" >&2; exit 1
    fi
fi
export DEBIAN_FRONTEND=noninteractive
# The package lists may be absent on a fresh image; refresh them if chromium is not known yet.
if ! apt-cache show chromium >/dev/null 2>&1 || ! apt-cache show chromium-driver >/dev/null 2>&1; then
    $SUDO apt-get update -q
fi
$SUDO apt-get install -y -q --no-install-recommends chromium chromium-driver
echo "install-browser: $(chromium --version 2>/dev/null) at $(command -v chromium), chromedriver at $(command -v chromedriver)"
