import { envInt } from '../env.ts';
import { defaultHeartbeatOptions, heartbeatCost } from '../heartbeat.ts';
import { besideFloors } from '../host.ts';
import { definePart, dynamoOf } from '../part.ts';
import { hostPart } from './host.ts';

export const heartbeatPart = definePart({
  name: 'heartbeat',
  describe: 'heartbeats and registration of an idle fleet of 10,000 machines, each figure against its goal',
  // Its own: on the DynamoDB Local another part used, writes are markedly slower (about twice, measured).
  dynamodb: { serves: 'the heartbeat fleet' },
  section: 'heartbeat',
  options: (env) => ({ ...defaultHeartbeatOptions, machines: envInt(env, 'BENCH_HEARTBEAT_MACHINES', defaultHeartbeatOptions.machines) }),
  run: (context, options) => heartbeatCost(dynamoOf(context).endpoint, context.id, options, context.progress, dynamoOf(context).javaPid),
  summaryKey: 'heartbeat',
  // Registration and the first roster beside their floors on this host, when the host part measured the same fleet.
  summarize(result, others) {
    const host = others.get(hostPart);
    return host?.machines === result.machines ? besideFloors(result.goals, host) : result.goals;
  },
});
