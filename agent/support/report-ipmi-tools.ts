// `npm test` prints this first: whether OpenIPMI's ipmi_sim and ipmitool are here. Without them the reference
// agent's IPMI tests (and its e2e test) are skipped, and the run says so before anything else.
import { ipmiToolsInstalled } from './ipmi-sim.ts';

console.log(
  ipmiToolsInstalled()
    ? 'ipmi_sim and ipmitool: installed (the reference agent is tested against OpenIPMI)'
    : 'ipmi_sim and ipmitool: NOT INSTALLED: the reference agent IPMI tests will be SKIPPED (apt-get install -y openipmi ipmitool; .ci/run does it)',
);
