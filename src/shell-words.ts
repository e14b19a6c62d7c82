/**
 * Quoting one word for a POSIX shell (and for `stdio:` command lines, which
 * upstream/transports.splitCommandLine splits the same way): left bare when it is safe.
 */
export function shellWord(word: string): string {
  if (word !== '' && /^[A-Za-z0-9_@%+=:,./-]+$/.test(word)) return word;
  return `'${word.replace(/'/g, `'\\''`)}'`;
}
