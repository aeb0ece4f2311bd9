// The Fleetward dashboard: the panels, each in web/panels/, put together around one refresh loop (poll.js) that
// reads the HTTP API every REFRESH_MS. Plain ES modules, no build step; docs/dashboard.md.
import { apiBaseUrl, createApi } from './api.js';
import { createPoller } from './poll.js';
import { createStore } from './store.js';
import { createAudit } from './panels/audit.js';
import { createCapacity } from './panels/capacity.js';
import { createFleetSummary } from './panels/fleet-summary.js';
import { createHeader } from './panels/header.js';
import { createMachineDetail } from './panels/machine-detail.js';
import { createMachines } from './panels/machines.js';
import { createMaintenance } from './panels/maintenance.js';
import { createMetaInstances } from './panels/meta-instances.js';
import { createPipeline } from './panels/pipeline.js';
import { createRackMap } from './panels/rack-map.js';
import { createRepairStats } from './panels/repair-stats.js';
import { createSafety } from './panels/safety.js';
import { createSignIn } from './panels/sign-in.js';

const REFRESH_MS = 2000;

async function start() {
  const api = createApi(await apiBaseUrl());
  /** @type {import('./poll.js').PanelContext} */
  const context = { api, store: createStore(), refresh: () => void poller.refresh() };
  const header = createHeader(context, REFRESH_MS);
  const signIn = createSignIn({
    api,
    onToken: context.refresh,
    onShown: () => {
      poller.stop();
      header.signedOut();
    },
  });
  const poller = createPoller({
    every: REFRESH_MS,
    stages: [
      [
        header,
        createFleetSummary(context),
        createSafety(context),
        createMaintenance(context),
        createPipeline(context),
        createRepairStats(context),
        createMachineDetail(context),
        createMetaInstances(context),
        createMachines(context),
        createAudit(context),
        createCapacity(context),
      ],
      // The rack map lists the types the fleet summary found.
      [createRackMap(context)],
    ],
    onRound: (round) => {
      signIn.hide();
      header.showRound(round);
    },
    onSignInNeeded: signIn.show,
  });
  await poller.refresh();
}

void start();
