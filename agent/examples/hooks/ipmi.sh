# Sourced by the example hooks: `bmc <ipmitool command>` drives the machine's own BMC as the agent does (lanplus,
# the password from IPMI_PASSWORD, which the agent puts in every hook's environment).
bmc() {
  ipmitool -I lanplus -H "$FLEETWARD_BMC_HOST" -p "$FLEETWARD_BMC_PORT" -U "$FLEETWARD_BMC_USER" -E -C "${FLEETWARD_BMC_CIPHER_SUITE:-3}" "$@"
}
if [ "${FLEETWARD_BMC_DRIVER:-}" != "ipmi" ]; then
  echo "this example drives IPMI BMCs; machine $FLEETWARD_MACHINE_ID has a $FLEETWARD_BMC_DRIVER one" >&2
  exit 2
fi
