import type { BmcConfig } from '../config/schema.ts';
import type { BmcDriver } from './driver.ts';
import { ipmiDriver } from './ipmi.ts';
import { redfishDriver } from './redfish.ts';

/** The driver a machine's `bmc.driver` names. A new protocol is one more case here (docs/agent.md "Adding a driver"). */
export function driverFor(bmc: BmcConfig): BmcDriver {
  switch (bmc.driver) {
    case 'ipmi':
      return ipmiDriver(bmc);
    case 'redfish':
      return redfishDriver(bmc);
  }
}
