/** The `auth.mode` values, apart from the settings so the CLI can check `--auth` without them. */
export const AUTH_MODES = ['none', 'token', 'oauth'] as const;
export type AuthMode = (typeof AUTH_MODES)[number];

export function isAuthMode(value: string): value is AuthMode {
  return (AUTH_MODES as readonly string[]).includes(value);
}
