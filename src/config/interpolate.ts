/**
 * `${ENV_VAR}` in the config file: every string value may name environment variables, so secrets
 * stay out of the file. `${NAME:-fallback}` gives a fallback; `$${` writes a literal `${`. A
 * variable that is unset (with no fallback) is an error naming the key and the variable, never
 * its value. The values substituted are collected so the hub can keep them out of what it shows.
 */

const REF = /\$\$\{|\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g;

export interface Interpolated {
  data: unknown;
  /** Every value taken from the environment (the secrets to keep out of logs and status). */
  secrets: string[];
}

function interpolateString(
  text: string,
  at: string,
  env: NodeJS.ProcessEnv,
  secrets: Set<string>,
): string {
  if (!text.includes('${')) return text;
  return text.replace(REF, (whole, name: string | undefined, fallback: string | undefined) => {
    if (whole === '$${') return '${';
    const value = env[name!];
    if (value !== undefined && value !== '') {
      secrets.add(value);
      return value;
    }
    if (fallback !== undefined) return fallback;
    throw new Error(
      `'${at || '(top level)'}' uses \${${name}}, but the environment variable ${name} is not set`,
    );
  });
}

/** A copy of `data` with `${VAR}` replaced in every string (keys are left as written). */
export function interpolateEnv(data: unknown, env: NodeJS.ProcessEnv = process.env): Interpolated {
  const secrets = new Set<string>();
  const walk = (v: unknown, at: string): unknown => {
    if (typeof v === 'string') return interpolateString(v, at, env, secrets);
    if (Array.isArray(v)) return v.map((x, i) => walk(x, at ? `${at}.${i}` : String(i)));
    if (v !== null && typeof v === 'object') {
      const out: Record<string, unknown> = {};
      for (const [k, x] of Object.entries(v)) out[k] = walk(x, at ? `${at}.${k}` : k);
      return out;
    }
    return v;
  };
  const data2 = walk(data, '');
  return { data: data2, secrets: [...secrets] };
}
