#!/bin/sh
# Example provision hook: boot the machine from the network into the tenant's image through its BMC, wait until the
# machine answers, then check it. The agent runs it with the machine, instance and request in its environment
# (docs/agent.md "Hooks"); its exit status and last lines are the create's outcome.
#
# Knobs (the agent's environment):
#   PROVISION_READY_COMMAND  succeeds once the machine is up    (default: ssh to the machine id as host name)
#   PROVISION_CHECK_COMMAND  checks the machine once it is up   (default: ssh ... nvidia-smi -L)
#   PROVISION_WAIT_SECONDS   how long to wait for it            (default 600; keep under the hook's timeout)
set -eu
. "$(dirname "$0")/ipmi.sh"

# The boot device for the next boot only. Some BMCs (ipmi_sim among them) keep no boot options: not fatal.
bmc chassis bootdev pxe options=efiboot || echo "the BMC kept no boot device; booting as configured"
# A resumed run (FLEETWARD_RESUMED=1: the agent restarted mid-provisioning) does the same: the steps are safe twice.
if bmc chassis power status | grep -q "is on"; then bmc chassis power cycle; else bmc chassis power on; fi

ready="${PROVISION_READY_COMMAND:-ssh -o BatchMode=yes -o ConnectTimeout=5 $FLEETWARD_MACHINE_ID true}"
deadline=$(( $(date +%s) + ${PROVISION_WAIT_SECONDS:-600} ))
until sh -c "$ready" >/dev/null 2>&1; do
  if [ "$(date +%s)" -ge "$deadline" ]; then
    echo "machine $FLEETWARD_MACHINE_ID did not come up within ${PROVISION_WAIT_SECONDS:-600} s"
    exit 1
  fi
  sleep "${PROVISION_POLL_SECONDS:-5}"
done
sh -c "${PROVISION_CHECK_COMMAND:-ssh -o BatchMode=yes $FLEETWARD_MACHINE_ID nvidia-smi -L}"
echo "provisioned $FLEETWARD_INSTANCE_NAME on $FLEETWARD_MACHINE_ID"
