#!/usr/bin/env bash
# System packages the tests need: Debian's Chromium, for the browser tests of the viewer.
if ! command -v chromium >/dev/null 2>&1; then
    SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    ($SUDO apt-get update -qq && $SUDO apt-get install -y -qq chromium >/dev/null) \
        || echo "tests/setup.sh: could not install chromium; the browser tests will be skipped" >&2
fi
exit 0
