import { envInt } from '../env.ts';
import { defaultHeartbeatOptions } from '../heartbeat.ts';
import { hostBench } from '../host.ts';
import { definePart, dynamoOf } from '../part.ts';

export const hostPart = definePart({
  name: 'host',
  describe: "what this host gives the timed goals: DynamoDB Local's contract floors for registration and the first roster, Node's speed",
  dynamodb: { serves: "the host's floors" },
  section: 'host',
  options: (env) => ({ machines: envInt(env, 'BENCH_HEARTBEAT_MACHINES', defaultHeartbeatOptions.machines) }),
  run: (context, options) => hostBench(dynamoOf(context).endpoint, context.id, options, context.progress, dynamoOf(context).javaPid),
  summaryKey: 'host',
  summarize: (result) => ({ node_loop_ms: result.node_loop.value, ...result.dynamodb_local_floors }),
});
