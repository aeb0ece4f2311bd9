import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { type Duration, RemovalPolicy, Stage, Validations } from 'aws-cdk-lib';
import type { ISecurityGroup, ISubnet, IVpc } from 'aws-cdk-lib/aws-ec2';
import { Effect, PolicyStatement, Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { Architecture, LoggingFormat, Runtime, Tracing } from 'aws-cdk-lib/aws-lambda';
import { NodejsFunction, OutputFormat } from 'aws-cdk-lib/aws-lambda-nodejs';
import { LogGroup, type RetentionDays } from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import { BUNDLED_OPENAPI_FILE } from '#http/openapi-served.ts';
import { version } from '#http/version.ts';
import type { RouteGroup } from './api-routes.ts';

/** The repository root: the project NodejsFunction bundles from (package.json, its `imports`, the lock file). */
export const projectRoot = resolve(import.meta.dirname, '..');

/**
 * Lambda entry points, each exporting `handler`: one per API route group (its routes only) and the stream and sweep
 * handlers, whose modules the local runner imports too.
 */
export const handlerEntry = (name: `api-${RouteGroup}` | 'stream' | 'sweep') => join(projectRoot, 'functions', 'handlers', `${name}.ts`);

/** The Lambda runtime DESIGN.md pins: the code, its dependencies and the tests are verified on Node 22. */
export const FUNCTION_RUNTIME = Runtime.NODEJS_22_X;

/** Where a function runs inside a VPC: its subnets and security groups (lib/agent-network.ts). */
export interface FunctionNetwork {
  vpc: IVpc;
  subnets: ISubnet[];
  securityGroups: ISecurityGroup[];
}

export interface FleetwardFunctionProps {
  entry: string;
  description: string;
  environment: Record<string, string>;
  memorySize?: number;
  timeout: Duration;
  logRetention: RetentionDays;
  /** Reserved concurrency: both a share of the account's concurrency this function always has and its ceiling. */
  reservedConcurrentExecutions?: number;
  /**
   * The API's OpenAPI document, generated at synth from the route table; shipped beside the bundle as
   * `openapi.json` and served from there, so the generator stays out of the bundle (http/openapi-served.ts).
   */
  openApiDocument?: object;
  /** Run inside a VPC (the functions that call a site agent reachable only there); outside any VPC when absent. */
  network?: FunctionNetwork;
  /**
   * Why the role's other grants on Resource "*" (besides X-Ray's and the VPC's, which this construct knows) take no
   * narrower resource: all go into the role's one acknowledgment of cdk-nag's IAM5 finding.
   */
  wildcardReasons?: string[];
}

/**
 * Every bundle stays within this, minified: the goal's "600 KB", read as 600,000 bytes (the stricter of KB and
 * KiB). test/cdk/bundles.test.ts builds them for real and checks; the coldstart bench reports the ratio.
 */
export const BUNDLE_LIMIT_BYTES = 600_000;

/** Modules replaced in the bundles; each replacement says why. */
const bundleAliases = {
  '@aws-sdk/credential-provider-node': join(projectRoot, 'lib', 'lambda-credentials.ts'),
  'node:http': join(projectRoot, 'lib', 'node-http-cjs.ts'),
  http: join(projectRoot, 'lib', 'node-http-cjs.ts'),
  semver: join(projectRoot, 'lib', 'semver-gte.ts'),
  '@aws-lambda-powertools/jmespath': join(projectRoot, 'lib', 'jmespath-fields.ts'),
  '@aws-lambda-powertools/jmespath/functions': join(projectRoot, 'lib', 'jmespath-fields.ts'),
  'mnemonist/lru-cache': join(projectRoot, 'lib', 'lru-cache.ts'),
};

/** Writes the document where the bundling step copies it from: the cloud assembly's directory (cdk.out). */
function stageOpenApiDocument(scope: Construct, document: object): string {
  const dir = join(Stage.of(scope)!.outdir, 'fleetward');
  mkdirSync(dir, { recursive: true });
  const file = join(dir, BUNDLED_OPENAPI_FILE);
  writeFileSync(file, JSON.stringify(document));
  return file;
}

const shellQuote = (path: string) => `'${path.replaceAll("'", "'\\''")}'`;

/**
 * One Lambda with the project's defaults (as Powertools' example app keeps them in one construct): Node 22 on
 * arm64, bundled offline by the local esbuild into one ESM file, JSON logs into its own log group with a set
 * retention, and its own role that can write to that log group and nothing else until the stack grants more.
 */
export class FleetwardFunction extends Construct {
  readonly function: NodejsFunction;
  /** The module bundled: what the function runs. */
  readonly entry: string;
  readonly role: Role;
  readonly logGroup: LogGroup;

  constructor(scope: Construct, id: string, props: FleetwardFunctionProps) {
    super(scope, id);
    this.entry = props.entry;
    this.logGroup = new LogGroup(this, 'Logs', { retention: props.logRetention, removalPolicy: RemovalPolicy.RETAIN });
    // No AWSLambdaBasicExecutionRole: it allows writing to every log group in the account.
    this.role = new Role(this, 'Role', {
      assumedBy: new ServicePrincipal('lambda.amazonaws.com'),
      description: `${props.description} (least privilege: grants are added per function by the site stack)`,
    });
    this.role.addToPrincipalPolicy(
      new PolicyStatement({
        effect: Effect.ALLOW,
        actions: ['logs:CreateLogStream', 'logs:PutLogEvents'],
        resources: [this.logGroup.logGroupArn],
      }),
    );
    if (props.network) {
      // What AWS's managed AWSLambdaVPCAccessExecutionRole grants, inline (no managed policy on these roles): Lambda
      // creates, describes and deletes the function's network interfaces in its subnets with the function's role.
      this.role.addToPrincipalPolicy(
        new PolicyStatement({
          sid: 'VpcNetworkInterfaces',
          effect: Effect.ALLOW,
          actions: [
            'ec2:CreateNetworkInterface',
            'ec2:DescribeNetworkInterfaces',
            'ec2:DescribeSubnets',
            'ec2:DeleteNetworkInterface',
            'ec2:AssignPrivateIpAddresses',
            'ec2:UnassignPrivateIpAddresses',
          ],
          resources: ['*'],
        }),
      );
    }
    const openApiFile = props.openApiDocument ? stageOpenApiDocument(this, props.openApiDocument) : undefined;
    this.function = new NodejsFunction(this, 'Function', {
      entry: props.entry,
      handler: 'handler',
      description: props.description,
      runtime: FUNCTION_RUNTIME,
      architecture: Architecture.ARM_64,
      memorySize: props.memorySize ?? 512,
      timeout: props.timeout,
      ...(props.reservedConcurrentExecutions !== undefined ? { reservedConcurrentExecutions: props.reservedConcurrentExecutions } : {}),
      role: this.role,
      logGroup: this.logGroup,
      ...(props.network ? { vpc: props.network.vpc, vpcSubnets: { subnets: props.network.subnets }, securityGroups: props.network.securityGroups } : {}),
      loggingFormat: LoggingFormat.JSON,
      // Powertools Tracer (captureLambdaHandler) adds its segments, and the AWS SDK calls', to the active trace.
      tracing: Tracing.ACTIVE,
      // No NODE_OPTIONS=--enable-source-maps: it parses the map at every cold start; the bundle maps its stack
      // traces itself, on the first one (functions/handlers/lambda-runtime.ts).
      environment: props.environment,
      projectRoot,
      depsLockFilePath: join(projectRoot, 'package-lock.json'),
      bundling: {
        // Never Docker: the local esbuild devDependency bundles, so synth works offline (DESIGN.md pitfalls).
        forceDockerBundling: false,
        format: OutputFormat.ESM,
        target: 'node22',
        platform: 'node',
        mainFields: ['module', 'main'],
        // Bundle the AWS SDK too: the deployed function runs the SDK versions the tests ran, not the runtime's
        // (nodejs22.x ships an SDK v3 of its own choosing, older than the lock file's and updated without notice).
        // The one exception: the SDK's event-stream code, which it loads with a dynamic import only for operations
        // that stream events (HttpProtocol.loadEventStreamCapability). DynamoDB and EventBridge have none, so the
        // import is never reached and leaving it out saves ≈ 15 KB; were it reached, it would fail loudly (nothing
        // beside the bundle to resolve it from), in the bundle tests and the coldstart bench too.
        externalModules: ['@smithy/core/event-streams'],
        minify: true,
        sourceMap: true,
        // Stack traces still point at file and line; the sources themselves would triple the map read for them.
        sourcesContent: false,
        esbuildArgs: {
          '--alias': Object.entries(bundleAliases).map(([module, replacement]) => `${module}=${replacement}`),
          // The dependencies' license notices go beside the bundle (index.mjs.LEGAL.txt), still shipped with the
          // code, instead of at the end of the module every cold start reads and compiles.
          '--legal-comments': 'external',
        },
        // FLEETWARD_LAMBDA_BUNDLE: the process-wide settings of a deployed function (functions/handlers/lambda-runtime.ts).
        // FLEETWARD_VERSION: the version, so that no bundle carries package.json for it (functions/http/version.ts).
        define: {
          'process.env.FLEETWARD_LAMBDA_BUNDLE': '"true"',
          'process.env.FLEETWARD_VERSION': JSON.stringify(version),
          ...(openApiFile ? { 'process.env.FLEETWARD_BUNDLED_OPENAPI': '"true"' } : {}),
        },
        ...(openApiFile
          ? {
              commandHooks: {
                beforeBundling: () => [],
                beforeInstall: () => [],
                afterBundling: (_input: string, output: string) => [`cp ${shellQuote(openApiFile)} ${shellQuote(join(output, BUNDLED_OPENAPI_FILE))}`],
              },
            }
          : {}),
        // Some dependencies are CommonJS and call `require` for Node built-ins; ESM output has no `require`.
        banner: "import { createRequire as __fleetwardCreateRequire } from 'node:module'; const require = __fleetwardCreateRequire(import.meta.url);",
      },
    });
    // Active tracing grants xray:PutTraceSegments and xray:PutTelemetryRecords, which have no resource to name.
    const xrayReason =
      'X-Ray accepts trace segments and telemetry only on Resource "*" (its actions have no resource-level permissions); ' +
      'active tracing grants exactly those two actions.';
    const networkReason = props.network
      ? 'In a VPC, the network interface actions Lambda performs with the role are on "*" too, as AWS\'s own ' +
        'AWSLambdaVPCAccessExecutionRole has them: the interfaces do not exist before Lambda makes them, and ec2:Describe* ' +
        'has no resource-level permissions.'
      : undefined;
    Validations.of(this.role).acknowledge({
      id: 'AwsSolutions-IAM5[Resource::*]',
      reason: [xrayReason, networkReason, ...(props.wildcardReasons ?? [])].filter(Boolean).join(' '),
    });
    // The function's role is only ever used after the log policy exists, so the first cold start can log.
    this.function.node.addDependency(this.role);
  }
}
