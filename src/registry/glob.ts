/**
 * Globs over names (`*` any run, `?` one character, everything else literal), as the upstream
 * include/exclude lists use them. The name may come from an untrusted upstream, so matching is
 * the two-pointer walk that only ever backs up to the last `*`: O(glob x name) at worst, never
 * the exponential backtracking a regex such as `^a.*a.*a.*b$` can fall into.
 */
export function globMatch(glob: string, name: string): boolean {
  let g = 0;
  let n = 0;
  let star = -1;
  let resume = 0;
  while (n < name.length) {
    const c = glob[g];
    if (c === '*') {
      star = g++;
      resume = n;
    } else if (g < glob.length && (c === '?' || c === name[n])) {
      g++;
      n++;
    } else if (star !== -1) {
      // The last `*` takes one more character; everything after it is tried again from there.
      g = star + 1;
      n = ++resume;
    } else {
      return false;
    }
  }
  while (glob[g] === '*') g++;
  return g === glob.length;
}
