/**
 * `moonhub session create|list|revoke`: sessions in the hub's data folder, done by the CLI
 * directly on the database (a running hub sees the change at once). Output is JSON on stdout.
 */
import type { Command } from 'commander';
import { resolveSettings, endpointUrl, type SettingsFlags } from '../config/settings.js';
import { SessionStore } from '../sessions/store.js';
import { issueSession, sessionRequestProblem } from '../sessions/issue.js';
import { ADMIN_PREFIX } from '../sessions/admin-api.js';
import { SessionSync } from '../sessions/redis-sync.js';

interface CommonFlags {
  config?: string;
  data?: string;
  hubId?: string;
  redis?: string;
}

interface CreateFlags extends CommonFlags {
  agent?: string;
  target?: string;
  name?: string;
  url?: string;
  plugins: string[];
  admin?: boolean;
}

function print(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

/**
 * Runs `fn` on the data folder's database. `create` makes the database when needed; `list` and
 * `revoke` only open one that exists, unless `cluster.redis` (or --redis) is set: then the
 * database is first brought up to date from Redis, and the change reaches Redis before the
 * command ends.
 */
async function withStore<T>(
  flags: SettingsFlags,
  fn: (store: SessionStore, hubId: string) => T,
  create = false,
): Promise<T> {
  const s = resolveSettings(flags);
  const store =
    create || s.cluster.redis !== undefined
      ? SessionStore.open(s.dataDir)
      : SessionStore.openExisting(s.dataDir, s.dataDirFrom);
  let sync: SessionSync | undefined;
  try {
    if (s.cluster.redis !== undefined)
      sync = await SessionSync.start(store, {
        url: s.cluster.redis,
        prefix: `${s.cluster.prefix ?? 'moonhub'}:${s.hub_id}`,
        commandTimeoutMs: s.cluster.limits.commandTimeoutMs,
      });
    return fn(store, s.hub_id);
  } finally {
    await sync?.close();
    store.close();
  }
}

async function create(flags: CreateFlags): Promise<void> {
  const s = resolveSettings(flags);
  const url = endpointUrl(s);
  if (flags.admin) {
    if (flags.agent !== undefined || flags.target !== undefined)
      throw new Error('an admin session has no agent or target: drop --agent/--target or --admin');
    await withStore(
      flags,
      (store, hubId) => {
        const { record, token } = store.create({ hub_id: hubId, role: 'admin', name: flags.name });
        print({
          session_uuid: record.session_uuid,
          token,
          role: 'admin',
          admin_url: new URL(`${ADMIN_PREFIX}sessions`, url).href,
        });
      },
      true,
    );
    return;
  }
  if (flags.agent === undefined) throw new Error('session create needs --agent NAME (or --admin)');
  const req = { agent: flags.agent, target: flags.target, name: flags.name };
  const why = sessionRequestProblem(s.config, req);
  if (why !== undefined) throw new Error(why);
  await withStore(
    flags,
    (store, hubId) =>
      print(
        issueSession(store, hubId, req, url, {
          dataDir: s.dataDir,
          configFile: s.configFile,
          pluginDirs: flags.plugins,
          hubId: flags.hubId,
        }),
      ),
    true,
  );
}

export function addSessionCommands(
  program: Command,
  collect: (v: string, p: string[]) => string[],
): void {
  const session = program
    .command('session')
    .description(
      "manage agent sessions (in the data folder's database; a running hub sees changes at once)",
    );
  const common = (cmd: Command): Command =>
    cmd
      .option(
        '-c, --config <file>',
        'config file (JSON or YAML): hub_id, agents, targets, public_url',
      )
      .option('--data <dir>', "the data folder (default: the config's data_dir, else ./.moonhub)")
      .option(
        '--hub-id <id>',
        'the hub the session belongs to (default: the config\'s, or "moonhub")',
      )
      .option('--redis <url>', "the cluster's Redis (default: the config's cluster.redis)");

  common(
    session
      .command('create')
      .description(
        'create a session and print {session_uuid, token, url, mcp_config}; the token is shown only once',
      )
      .option('--agent <name>', 'the agent the session belongs to')
      .option('--target <name>', 'the target (its plugin lists are the ceiling)')
      .option('--name <name>', 'a label for people')
      .option(
        '--url <url>',
        "the hub's MCP endpoint URL (default: public_url, or http://HOST:PORT/mcp)",
      )
      .option(
        '-p, --plugins <dir>',
        'plugins directory for the stdio variant (repeatable)',
        collect,
        [],
      )
      .option('--admin', 'an admin session: its token works on the admin API only'),
  ).action((flags: CreateFlags) => create(flags));

  common(
    session
      .command('list')
      .description("list this hub's sessions as JSON (never their tokens)")
      .option('--all', 'sessions of every hub id in the data folder'),
  ).action((flags: CommonFlags & { all?: boolean }) =>
    withStore(flags, (store, hubId) => print(store.list(flags.all ? undefined : hubId))),
  );

  common(
    session
      .command('revoke')
      .description('revoke a session: its token stops working at once')
      .argument('<uuid>'),
  ).action((uuid: string, flags: CommonFlags) =>
    withStore(flags, (store, hubId) => {
      if (!store.revoke(uuid, hubId))
        throw new Error(`no active session ${uuid} of hub '${hubId}'`);
      print({ revoked: uuid });
    }),
  );
}
