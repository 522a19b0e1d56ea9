#!/bin/sh
# Install Debian's chromium for the report's browser test. Idempotent: does nothing when
# /usr/bin/chromium is already there. Needs root (CI runs as root); prints why when it cannot.
set -eu

CHROMIUM=${CHROMIUM:-/usr/bin/chromium}

if [ -x "$CHROMIUM" ]; then
    echo "chromium already installed: $CHROMIUM"
    exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
    echo "install-chromium.sh: $CHROMIUM is missing and installing it needs root" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
# A stale package index makes apt fail with 404s on the .debs; refresh it first.
apt-get update -qq
apt-get install -y -qq --no-install-recommends chromium
if [ ! -x "$CHROMIUM" ]; then
    echo "install-chromium.sh: apt-get finished but $CHROMIUM is still missing" >&2
    exit 1
fi
"$CHROMIUM" --version
