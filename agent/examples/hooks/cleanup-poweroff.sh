#!/bin/sh
# Example cleanup hook: sanitize the machine, then leave it powered off for the next tenant's boot.
#   CLEANUP_COMMAND  the site's wipe (default: none: a netbooted, diskless machine keeps nothing once off)
set -eu
. "$(dirname "$0")/ipmi.sh"
if [ -n "${CLEANUP_COMMAND:-}" ]; then sh -c "$CLEANUP_COMMAND"; fi
bmc chassis power off
echo "cleaned $FLEETWARD_MACHINE_ID after $FLEETWARD_INSTANCE_NAME"
