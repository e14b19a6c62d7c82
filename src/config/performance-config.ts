/**
 * The config file's `performance` key: caches that trade memory for CPU, each with its bound.
 * A change needs a restart.
 */

/** `performance:` in the config file. */
export interface PerformanceConfig {
  /** Bytes of serialised list pages kept per view (0: no cache); see src/server/list-cache.ts. */
  list_cache_bytes?: number;
}

/** The dispatcher options the section sets (only the keys given). */
export function performanceOptionsOf(section: PerformanceConfig | undefined): {
  listCacheBytes?: number;
} {
  const bytes = section?.list_cache_bytes;
  return bytes === undefined ? {} : { listCacheBytes: bytes };
}
