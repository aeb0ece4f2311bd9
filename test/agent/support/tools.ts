import { ipmiToolsInstalled } from '#agent/support/ipmi-sim.ts';

/** IPMI tests need OpenIPMI's ipmi_sim and ipmitool; without them they are skipped, and say why once. */
export const ipmiTools = ipmiToolsInstalled();
export const IPMI_SKIP_REASON = 'ipmi_sim and ipmitool are not installed (Debian: apt-get install -y openipmi ipmitool; .ci/run installs them)';
if (!ipmiTools) console.warn(`SKIPPED: the reference agent's IPMI tests: ${IPMI_SKIP_REASON}`);
