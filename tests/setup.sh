#!/usr/bin/env bash
# System packages the tests need, from Debian: Chromium (browser tests of the viewer) and YADE
# (the DEM acquisition test). A package that cannot be installed makes its tests skip, loudly.
need=()
command -v chromium >/dev/null 2>&1 || need+=(chromium)
command -v yade >/dev/null 2>&1 || need+=(yade)
if [ ${#need[@]} -gt 0 ]; then
    SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    ($SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >/dev/null) \
        || echo "tests/setup.sh: could not install ${need[*]}; their tests will be skipped" >&2
fi
exit 0
