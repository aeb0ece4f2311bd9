#!/usr/bin/env node
// The fleetward CLI (see docs/cli.md). Needs Node 22+: run it as `npx fleetward` or `npm run fleetward --`.
import { main } from '#cli/program.ts';

process.exitCode = await main(process.argv);
