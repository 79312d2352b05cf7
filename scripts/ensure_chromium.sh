#!/bin/sh
# Make sure a Chromium for the viz browser tests (tests/test_viz_browser.py) is on this
# machine: nothing to do when `chromium` (or `chromium-browser`) is on PATH; otherwise,
# as root with apt-get, install Debian's chromium package. When it cannot be installed
# the browser tests skip, so this says so and does not fail `make test`.
if command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; then
    exit 0
fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing Chromium for the viz browser tests (apt-get install chromium)"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
    command -v chromium >/dev/null 2>&1 && exit 0
fi
echo "no chromium found and it could not be installed: the viz browser tests will skip" >&2
exit 0
