#!/usr/bin/env bash
# Makes sure Debian's Chromium is at /usr/bin/chromium for the dashboard's browser tests (test/browser).
# Installs it with apt when missing; needs root and apt-get. Safe to run again: does nothing when present.
#   bash scripts/ensure-chromium.sh
# Exit status: 0 when /usr/bin/chromium is there afterwards, 1 when it is not (the reason is printed).
set -u
CHROMIUM=/usr/bin/chromium

if [ -x "$CHROMIUM" ]; then
  echo "ensure-chromium: found $CHROMIUM ($("$CHROMIUM" --version 2>/dev/null || echo 'version unknown'))"
  exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
  echo "ensure-chromium: $CHROMIUM is missing and apt-get is not available; skipping the install." >&2
  echo "ensure-chromium: install Chromium yourself (Debian: apt-get install chromium) to run the browser tests." >&2
  exit 1
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "ensure-chromium: $CHROMIUM is missing and this is not root; skipping the install." >&2
  echo "ensure-chromium: run as root: apt-get update && apt-get install -y chromium" >&2
  exit 1
fi

export DEBIAN_FRONTEND=noninteractive
echo "ensure-chromium: $CHROMIUM is missing; running: apt-get update"
if ! apt-get update -q; then
  echo "ensure-chromium: apt-get update failed" >&2
  exit 1
fi
echo "ensure-chromium: running: apt-get install -y chromium"
if ! apt-get install -y -q chromium; then
  echo "ensure-chromium: apt-get install chromium failed" >&2
  exit 1
fi
if [ ! -x "$CHROMIUM" ]; then
  echo "ensure-chromium: chromium was installed but $CHROMIUM is still missing" >&2
  exit 1
fi
echo "ensure-chromium: installed $("$CHROMIUM" --version 2>/dev/null || echo chromium)"
