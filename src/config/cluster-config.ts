/**
 * The config file's `cluster.limits` key (snake_case, checked by the schema) turned into the
 * camelCase bounds the cluster stores take (`cluster/session-records.ts` `RecordLimits`,
 * `cluster/answers.ts` `AnswerRouterOptions`; config/ does not import them: the compiler checks
 * the shape where `serve` hands it over).
 */

/** `cluster.limits:` in the config file. */
export interface ClusterLimitsConfig {
  max_sessions?: number;
  idle_timeout_ms?: number;
  max_subscriptions?: number;
  max_events_per_stream?: number;
  max_event_bytes?: number;
  event_ttl_ms?: number;
  instance_ttl_ms?: number;
  session_cache_ms?: number;
  answer_timeout_ms?: number;
  max_waiting_answers?: number;
  max_forwarded_answer_bytes?: number;
  event_log_bytes?: number;
  event_log_bytes_per_principal?: number;
  command_timeout_ms?: number;
}

export interface ClusterLimitSettings {
  records: {
    maxSessions?: number;
    idleTimeoutMs?: number;
    maxSubscriptions?: number;
    maxEventsPerStream?: number;
    maxEventBytes?: number;
    eventTtlMs?: number;
    instanceTtlMs?: number;
    sessionCacheMs?: number;
    eventLogBytes?: number;
    eventLogBytesPerPrincipal?: number;
  };
  answers: { timeoutMs?: number; maxPending?: number; maxForwardBytes?: number };
  /** How long a Redis command may wait for its answer (cluster/redis.ts; undefined: default). */
  commandTimeoutMs: number | undefined;
}

export function clusterLimitsOf(c: ClusterLimitsConfig | undefined): ClusterLimitSettings {
  const records: ClusterLimitSettings['records'] = {};
  const answers: ClusterLimitSettings['answers'] = {};
  if (c?.max_sessions !== undefined) records.maxSessions = c.max_sessions;
  if (c?.idle_timeout_ms !== undefined) records.idleTimeoutMs = c.idle_timeout_ms;
  if (c?.max_subscriptions !== undefined) records.maxSubscriptions = c.max_subscriptions;
  if (c?.max_events_per_stream !== undefined) records.maxEventsPerStream = c.max_events_per_stream;
  if (c?.max_event_bytes !== undefined) records.maxEventBytes = c.max_event_bytes;
  if (c?.event_ttl_ms !== undefined) records.eventTtlMs = c.event_ttl_ms;
  if (c?.instance_ttl_ms !== undefined) records.instanceTtlMs = c.instance_ttl_ms;
  if (c?.session_cache_ms !== undefined) records.sessionCacheMs = c.session_cache_ms;
  if (c?.answer_timeout_ms !== undefined) answers.timeoutMs = c.answer_timeout_ms;
  if (c?.max_waiting_answers !== undefined) answers.maxPending = c.max_waiting_answers;
  if (c?.max_forwarded_answer_bytes !== undefined)
    answers.maxForwardBytes = c.max_forwarded_answer_bytes;
  if (c?.event_log_bytes !== undefined) records.eventLogBytes = c.event_log_bytes;
  if (c?.event_log_bytes_per_principal !== undefined)
    records.eventLogBytesPerPrincipal = c.event_log_bytes_per_principal;
  return { records, answers, commandTimeoutMs: c?.command_timeout_ms };
}
