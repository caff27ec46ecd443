// docs/api.md#filename-templates: how `zip_filename` names the ZIP(s) of a job.
//
// Decisions (where docs/api.md#filename-templates is silent):
// - Braces are always interpreted: every `zip_filename` is parsed, and `{{` / `}}` always mean a
//   literal brace, so `a{{b}}.zip` names the ZIP `a{b}.zip`. A value without placeholders is the
//   "plain name" of docs/api.md#filename-templates (after its escapes are rendered).
// - Single ZIP (N = 1): the rendered value is used as is; no `.zip` is appended to a plain name
//   without extension (the reference gives `.zip` only in the split row). Placeholders render with
//   n = 1 and total = 1.
// - Split (N >= 2), value with no index placeholder ({n}, {n2}, {n3}), plain names included: the
//   value is rendered once, then `_{n}` goes before the last extension, n zero-padded to the digit
//   count of N; with no extension, `_{n}` goes at the end and `.zip` is appended. ({total} and
//   {date} in such a template render normally.)
// - Split, value with an index placeholder: rendered per ZIP exactly as written; nothing is
//   appended (a literal template is the client's choice), so `part-{n}` gives `part-1`, ...
// - The last extension: see `splitExtension` (`.hidden` and `a.` have none; `photos.tar.gz` -> `.gz`).
// - `{n2}` / `{n3}` pad to at least 2 / 3 digits and never truncate: n = 100 gives `100` for {n2}.
// - Placeholder names are case-sensitive and take no spaces: `{N}` and `{ n }` are unknown.
// - zip_filename omitted: `archive-{job_id}.zip`; when such a job splits, the plain rule applies
//   (`archive-<id>_1.zip`, ...).
// - Every expanded name must be 1..255 characters (code points) with no `/` or `\` (docs/api.md#filename-templates), and
//   also (decided) no control character, no unpaired surrogate, and not `.` or `..`: such names
//   cannot be stored (Postgres refuses NUL) or saved as a download.
// - Error messages do not name the field; `formatZodError` prefixes the path (`zip_filename: ...`).

import { ZIP_FILENAME_MAX_CHARS } from './plans';
import { codePointLength, hasControlCharacter, hasLoneSurrogate, splitExtension } from './text';

export const FILENAME_PLACEHOLDERS = ['n', 'n2', 'n3', 'total', 'date'] as const;
export type FilenamePlaceholder = (typeof FILENAME_PLACEHOLDERS)[number];

const INDEX_PLACEHOLDERS: ReadonlySet<FilenamePlaceholder> = new Set(['n', 'n2', 'n3']);

export type FilenameTemplatePart = { type: 'text'; text: string } | { type: 'placeholder'; name: FilenamePlaceholder };

export interface ParsedFilenameTemplate {
  source: string;
  parts: FilenameTemplatePart[];
  /** Contains {n}, {n2} or {n3}. */
  hasIndexPlaceholder: boolean;
  /** Contains any placeholder (escaped braces alone do not count). */
  hasPlaceholders: boolean;
}

export type FilenameTemplateProblem =
  | 'unknown_placeholder'
  | 'unbalanced_braces'
  | 'too_long'
  | 'empty_name'
  | 'name_too_long'
  | 'name_has_slash'
  | 'name_has_control_character'
  | 'name_is_dot';

export interface FilenameTemplateError {
  ok: false;
  problem: FilenameTemplateProblem;
  /** Names the problem, e.g. `unknown placeholder "{foo}" ...`; becomes a 400 INVALID_REQUEST. */
  message: string;
}

export type ParseFilenameTemplateResult = { ok: true; template: ParsedFilenameTemplate } | FilenameTemplateError;
export type RenderZipFilenamesResult = { ok: true; names: string[] } | FilenameTemplateError;

const fail = (problem: FilenameTemplateProblem, message: string): FilenameTemplateError => ({ ok: false, problem, message });

const PLACEHOLDER_LIST = '{n}, {n2}, {n3}, {total} and {date}';

/** 1-based character (code point) position of a UTF-16 index, for messages. */
const position = (value: string, index: number) => codePointLength(value.slice(0, index)) + 1;

/** Parses `zip_filename` into text and placeholders (docs/api.md#filename-templates). */
export function parseFilenameTemplate(value: string): ParseFilenameTemplateResult {
  const parts: FilenameTemplatePart[] = [];
  let text = '';
  let i = 0;
  while (i < value.length) {
    const c = value[i];
    if (c === '{') {
      if (value[i + 1] === '{') {
        text += '{';
        i += 2;
        continue;
      }
      const close = value.indexOf('}', i + 1);
      const reopen = value.indexOf('{', i + 1);
      if (close === -1 || (reopen !== -1 && reopen < close)) {
        return fail(
          'unbalanced_braces',
          `unbalanced braces: "{" at character ${position(value, i)} is never closed (write "{{" for a literal "{")`,
        );
      }
      const name = value.slice(i + 1, close);
      if (!(FILENAME_PLACEHOLDERS as readonly string[]).includes(name)) {
        return fail('unknown_placeholder', `unknown placeholder "{${name}}"; the placeholders are ${PLACEHOLDER_LIST} (write "{{" and "}}" for literal braces)`);
      }
      if (text) parts.push({ type: 'text', text });
      text = '';
      parts.push({ type: 'placeholder', name: name as FilenamePlaceholder });
      i = close + 1;
    } else if (c === '}') {
      if (value[i + 1] === '}') {
        text += '}';
        i += 2;
        continue;
      }
      return fail(
        'unbalanced_braces',
        `unbalanced braces: "}" at character ${position(value, i)} has no opening "{" (write "}}" for a literal "}")`,
      );
    } else {
      text += c;
      i++;
    }
  }
  if (text) parts.push({ type: 'text', text });
  const placeholders = parts.filter((p) => p.type === 'placeholder');
  return {
    ok: true,
    template: {
      source: value,
      parts,
      hasPlaceholders: placeholders.length > 0,
      hasIndexPlaceholder: placeholders.some((p) => INDEX_PLACEHOLDERS.has(p.name)),
    },
  };
}

/** `YYYY-MM-DD` of a date in UTC. */
export function utcDate(date: Date): string {
  const t = date.getTime();
  if (Number.isNaN(t)) throw new RangeError('invalid date');
  const y = date.getUTCFullYear();
  const m = date.getUTCMonth() + 1;
  const d = date.getUTCDate();
  return `${String(y).padStart(4, '0')}-${String(m).padStart(2, '0')}-${String(d).padStart(2, '0')}`;
}

const digits = (n: number) => String(n).length;

function renderOnce(template: ParsedFilenameTemplate, n: number, total: number, date: string): string {
  let out = '';
  for (const part of template.parts) {
    if (part.type === 'text') out += part.text;
    else if (part.name === 'n') out += String(n);
    else if (part.name === 'n2') out += String(n).padStart(2, '0');
    else if (part.name === 'n3') out += String(n).padStart(3, '0');
    else if (part.name === 'total') out += String(total);
    else out += date;
  }
  return out;
}

/** The plain-name rule for a split job: `_{n}` before the last extension, the format's (`.zip`) when there is none. */
function plainSplitName(name: string, n: number, total: number, extension = '.zip'): string {
  const [base, ext] = splitExtension(name);
  return `${base}_${String(n).padStart(digits(total), '0')}${ext || extension}`;
}

/** Name of ZIP n of total (no validation). */
function nameOf(template: ParsedFilenameTemplate, n: number, total: number, date: string, extension?: string): string {
  if (total === 1 || template.hasIndexPlaceholder) return renderOnce(template, n, total, date);
  return plainSplitName(renderOnce(template, 1, total, date), n, total, extension);
}

function checkName(name: string, n: number, total: number): FilenameTemplateError | null {
  const which = total === 1 ? '' : ` for ZIP ${n} of ${total}`;
  const shown = JSON.stringify(name);
  if (name.length === 0) return fail('empty_name', `expands to an empty file name${which}`);
  const chars = codePointLength(name);
  if (chars > ZIP_FILENAME_MAX_CHARS) {
    return fail('name_too_long', `expands to a file name of ${chars} characters${which}; the most is ${ZIP_FILENAME_MAX_CHARS}`);
  }
  if (name.includes('/') || name.includes('\\')) {
    return fail('name_has_slash', `expands to ${shown}${which}, which contains "${name.includes('/') ? '/' : '\\'}"; file names cannot contain "/" or "\\"`);
  }
  if (hasControlCharacter(name) || hasLoneSurrogate(name)) {
    return fail('name_has_control_character', `must not contain control characters or unpaired surrogates`);
  }
  if (name === '.' || name === '..') return fail('name_is_dot', `expands to ${shown}${which}, which is not a usable file name`);
  return null;
}

export interface RenderZipFilenamesInput {
  /** `zip_filename` as given, or null when omitted. */
  template: string | null | undefined;
  jobId: string;
  /** Job creation time; `{date}` is its UTC date. */
  createdAt: Date;
  /** Number of ZIPs of the job (>= 1). */
  total: number;
  /** The archive format's extension (ARCHIVE_EXTENSIONS): default names and split names without one end with it. Default `.zip`. */
  extension?: string;
}

/**
 * The file names of a job's ZIPs, in sequence order (docs/api.md#filename-templates). Returns
 * `{ ok: false, message }` for an invalid template or an invalid expanded name. Throws a
 * RangeError only for a programming error (total not a positive integer, invalid date).
 */
export function renderZipFilenames(input: RenderZipFilenamesInput): RenderZipFilenamesResult {
  const { total } = input;
  if (!Number.isSafeInteger(total) || total < 1) throw new RangeError(`total must be a positive integer, got ${total}`);
  const date = utcDate(input.createdAt);
  const extension = input.extension ?? '.zip';
  if (input.template === null || input.template === undefined) {
    const name = `archive-${input.jobId}${extension}`;
    if (total === 1) return { ok: true, names: [name] };
    return { ok: true, names: Array.from({ length: total }, (_, i) => plainSplitName(name, i + 1, total, extension)) };
  }
  const parsed = parseFilenameTemplate(input.template);
  if (!parsed.ok) return parsed;
  const names: string[] = [];
  for (let n = 1; n <= total; n++) {
    const name = nameOf(parsed.template, n, total, date, extension);
    const problem = checkName(name, n, total);
    if (problem) return problem;
    names.push(name);
  }
  return { ok: true, names };
}

export interface ValidateZipFilenameOptions {
  /**
   * The most ZIPs the job can split into (default 1: a job without `max_zip_size_bytes`).
   * A split job has at most one ZIP per file, so pass the number of files.
   */
  maxTotal?: number;
  /** Job creation time, for the names shown in messages (default: now). */
  createdAt?: Date;
}

/**
 * Create-time check of a `zip_filename`: the value itself (at most 255 characters, valid
 * template) and its expansion for a single ZIP and for the largest possible split, so that
 * rendering can never fail later. The longest names of a split into N are those of ZIP N (names
 * only grow with n and N), and a name's characters do not depend on n otherwise, so checking
 * ZIPs 1 and N of N covers every split into 2..N.
 */
export function validateZipFilename(value: string, options: ValidateZipFilenameOptions = {}): { ok: true; template: ParsedFilenameTemplate } | FilenameTemplateError {
  const chars = codePointLength(value);
  if (chars > ZIP_FILENAME_MAX_CHARS) return fail('too_long', `must be at most ${ZIP_FILENAME_MAX_CHARS} characters (got ${chars})`);
  const parsed = parseFilenameTemplate(value);
  if (!parsed.ok) return parsed;
  const date = utcDate(options.createdAt ?? new Date());
  const maxTotal = Math.max(1, Math.floor(options.maxTotal ?? 1));
  const checks: [n: number, total: number][] = [[1, 1]];
  if (maxTotal >= 2) checks.push([1, maxTotal], [maxTotal, maxTotal]);
  for (const [n, total] of checks) {
    const problem = checkName(nameOf(parsed.template, n, total, date), n, total);
    if (problem) return problem;
  }
  return parsed;
}
