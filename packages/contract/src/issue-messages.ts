// The human message of a request that failed its schema: each field path with its problem
// (`files[2].url: must be an http or https URL; expires_in: is required`). Re-exported by
// schemas.ts, where the schemas whose issues it words are.

/** A key as a message quotes it: JSON, cut to 40 characters. */
export const shortKey = (key: string) => JSON.stringify(key.length > 40 ? `${key.slice(0, 40)}…` : key);

const IDENTIFIER = /^[A-Za-z_$][\w$]*$/;

/** `files[2].url`, `metadata["a key"]`. */
export function formatIssuePath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const segment of path) {
    if (typeof segment === 'number') out += `[${segment}]`;
    else {
      const key = String(segment);
      if (IDENTIFIER.test(key)) out += out ? `.${key}` : key;
      else out += `[${shortKey(key)}]`;
    }
  }
  return out;
}

const MAX_REPORTED_ISSUES = 10;

interface IssueLike {
  code?: string;
  path: readonly PropertyKey[];
  message: string;
  keys?: readonly string[];
  issues?: readonly IssueLike[];
}

function describeIssue(issue: IssueLike): string {
  if (issue.code === 'unrecognized_keys' && issue.keys) {
    const keys = issue.keys.slice(0, 5).map(shortKey).join(', ');
    const more = issue.keys.length > 5 ? ` and ${issue.keys.length - 5} more` : '';
    return `unknown field${issue.keys.length === 1 ? '' : 's'} ${keys}${more}`;
  }
  if (issue.code === 'invalid_key' && issue.issues?.[0]) return `key: ${issue.issues[0].message}`;
  return issue.message;
}

/**
 * One human message for a validation failure, naming each field path and its problem:
 * `files[2].url: must be an http or https URL; expires_in: is required`.
 */
export function formatZodError(error: { issues: readonly IssueLike[] }): string {
  const seen = new Set<string>();
  const lines: string[] = [];
  for (const issue of error.issues) {
    const path = formatIssuePath(issue.path);
    const line = path ? `${path}: ${describeIssue(issue)}` : describeIssue(issue);
    if (!seen.has(line)) {
      seen.add(line);
      lines.push(line);
    }
  }
  if (lines.length === 0) return 'invalid request';
  const shown = lines.slice(0, MAX_REPORTED_ISSUES).join('; ');
  return lines.length > MAX_REPORTED_ISSUES ? `${shown}; and ${lines.length - MAX_REPORTED_ISSUES} more problems` : shown;
}
