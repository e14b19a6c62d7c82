/**
 * What `serve` adds in the scale-out modes (docs/scale-out.md): the cluster's shared state, the
 * session layer whose 2025 sessions every process serves, and the ready line naming the
 * instance. A single process without Redis opens none of it.
 */
import type { Server } from 'node:http';
import { openCluster, type Cluster } from '../cluster/index.js';
import { workerAnswerKey, workerSlot } from '../cluster/primary.js';
import type { resolveSettings } from '../config/settings.js';
import type { createLogger } from '../log.js';
import type { HttpServerOptions } from '../server/index.js';
import { LegacySessionStore } from '../server/legacy-sessions.js';
import { RequestStates } from '../server/request-state.js';
import { SharedSessionLayer } from '../server/shared-sessions.js';
import { SharedStreams } from '../server/shared-streams.js';

/** The scale-out modes' shared state (docs/scale-out.md); none for a single process. */
export async function openServeCluster(
  s: ReturnType<typeof resolveSettings>,
  logger: ReturnType<typeof createLogger>,
): Promise<Cluster | undefined> {
  if (s.cluster.redis === undefined && workerSlot() === undefined) return undefined;
  return openCluster({
    hubId: s.hub_id,
    dataDir: s.dataDir,
    redis: s.cluster.redis,
    prefix: s.cluster.prefix,
    worker: workerSlot() !== undefined,
    limits: s.cluster.limits.records,
    answers: s.cluster.limits.answers,
    answerKey: workerAnswerKey(),
    commandTimeoutMs: s.cluster.limits.commandTimeoutMs,
    onError: (err, where) => logger.warn({ err, where }, 'cluster bus or store failure'),
  });
}

/** Cluster modes: 2025 sessions any process serves, kept in the cluster's shared records. */
export function sharedSessions(
  cluster: Cluster,
  logger: ReturnType<typeof createLogger>,
  http: HttpServerOptions,
) {
  const records = cluster.records();
  // limits.sessions.per_principal and eviction hold cluster-wide (SharedSessionLayer.commit admits
  // in the shared store); max_sessions bounds the store and each process's own table too.
  const local = new LegacySessionStore({
    idleTimeoutMs: records.limits.idleTimeoutMs,
    maxSessions: records.limits.maxSessions,
    ...(http.limits === undefined ? {} : { limits: http.limits }),
    ...(http.refused === undefined ? {} : { refused: http.refused }),
  });
  const onError = (err: unknown, where: string) =>
    logger.warn({ err, where }, 'cluster session store failure');
  return new SharedSessionLayer(local, {
    records,
    streams: new SharedStreams(records, cluster.bus, onError),
    bus: cluster.bus,
    answers: cluster.answers,
    onError,
    ...(http.refused === undefined ? {} : { refused: http.refused }),
  });
}

/**
 * 2026-07-28 request states every process of the hub opens: sealed with a key derived from the
 * cluster's shared answer key, so an `input_required` retry may land on any instance.
 */
export function sharedRequestStates(cluster: Cluster, ttlMs: number | undefined): RequestStates {
  const states = new RequestStates(cluster.answers.key, { ttlMs });
  cluster.answers.watchKey((key) => states.useSecret(key));
  return states;
}

/** Which process answered: for operators checking their load balancer (and the tests). */
export function instanceHeaders(cluster: Cluster | undefined): Record<string, string> | undefined {
  return cluster === undefined ? undefined : { 'X-Moonhub-Instance': cluster.instanceId };
}

/** The ready line on stderr (tests and scripts wait for it); a worker's names its pid. */
export function announce(
  http: { url: string; server: Server },
  tools: number,
  cluster: Cluster | undefined,
): void {
  const slot = workerSlot();
  process.stderr.write(
    slot === undefined
      ? `moonhub: serving MCP at ${http.url} (${tools} tools${cluster === undefined ? '' : `, instance ${cluster.instanceId}`})\n`
      : `moonhub: worker ${slot} (pid ${process.pid}, instance ${cluster!.instanceId}) ready at ${http.url} (${tools} tools)\n`,
  );
}
