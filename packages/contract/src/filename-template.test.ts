import { describe, expect, it } from '@jest/globals';
import { parseFilenameTemplate, renderZipFilenames, utcDate, validateZipFilename } from './filename-template';

const JOB = '3f2c1a9e-0000-4000-8000-00000000abcd';
const CREATED = new Date('2024-03-07T23:59:59.999Z');

function names(template: string | null, total: number, createdAt = CREATED): string[] {
  const result = renderZipFilenames({ template, jobId: JOB, createdAt, total });
  if (!result.ok) throw new Error(`unexpected error: ${result.message}`);
  return result.names;
}

function failure(template: string, total = 1) {
  const result = renderZipFilenames({ template, jobId: JOB, createdAt: CREATED, total });
  if (result.ok) throw new Error(`expected an error, got ${JSON.stringify(result.names)}`);
  return result;
}

const range = (from: number, to: number, f: (n: number) => string) => Array.from({ length: to - from + 1 }, (_, i) => f(from + i));

describe('docs/api.md#filename-templates examples: plain names', () => {
  it('single ZIP: the name is used as is', () => {
    expect(names('abc.zip', 1)).toEqual(['abc.zip']);
    expect(names('photos.tar.gz', 1)).toEqual(['photos.tar.gz']);
  });

  it('zip_filename omitted: archive-{job_id}.zip', () => {
    expect(names(null, 1)).toEqual([`archive-${JOB}.zip`]);
  });

  it('abc.zip with N=5 gives abc_1.zip to abc_5.zip', () => {
    expect(names('abc.zip', 5)).toEqual(['abc_1.zip', 'abc_2.zip', 'abc_3.zip', 'abc_4.zip', 'abc_5.zip']);
  });

  it('abc.zip with N=15 gives abc_01.zip to abc_15.zip', () => {
    const out = names('abc.zip', 15);
    expect(out).toEqual(range(1, 15, (n) => `abc_${String(n).padStart(2, '0')}.zip`));
    expect(out[0]).toBe('abc_01.zip');
    expect(out[14]).toBe('abc_15.zip');
  });

  it('abc.zip with N=150 gives abc_001.zip to abc_150.zip', () => {
    const out = names('abc.zip', 150);
    expect(out).toHaveLength(150);
    expect(out[0]).toBe('abc_001.zip');
    expect(out[9]).toBe('abc_010.zip');
    expect(out[99]).toBe('abc_100.zip');
    expect(out[149]).toBe('abc_150.zip');
  });

  it('pads to the digit count of N exactly (N=9 -> 1 digit, N=10 -> 2 digits)', () => {
    expect(names('abc.zip', 9)[8]).toBe('abc_9.zip');
    expect(names('abc.zip', 10)).toEqual(range(1, 10, (n) => `abc_${String(n).padStart(2, '0')}.zip`));
  });

  it('photos.tar.gz with N=5 gives photos.tar_1.gz to photos.tar_5.gz', () => {
    expect(names('photos.tar.gz', 5)).toEqual(range(1, 5, (n) => `photos.tar_${n}.gz`));
  });

  it('abc (no extension) with N=5 gives abc_1.zip to abc_5.zip; single ZIP keeps abc', () => {
    expect(names('abc', 5)).toEqual(range(1, 5, (n) => `abc_${n}.zip`));
    expect(names('abc', 1)).toEqual(['abc']);
  });

  it('omitted name, split: the plain rule on archive-{job_id}.zip', () => {
    expect(names(null, 2)).toEqual([`archive-${JOB}_1.zip`, `archive-${JOB}_2.zip`]);
  });
});

describe('last extension edge cases (decision: a dot at position 0 or at the end is no separator)', () => {
  it('.hidden has no extension', () => {
    expect(names('.hidden', 3)).toEqual(['.hidden_1.zip', '.hidden_2.zip', '.hidden_3.zip']);
  });
  it('a. has no extension', () => {
    expect(names('a.', 2)).toEqual(['a._1.zip', 'a._2.zip']);
  });
  it('.config.zip splits at the last dot', () => {
    expect(names('.config.zip', 2)).toEqual(['.config_1.zip', '.config_2.zip']);
  });
  it('my.photos from trip: everything after the last dot is the extension', () => {
    expect(names('my.photos from trip', 2)).toEqual(['my_1.photos from trip', 'my_2.photos from trip']);
  });
});

describe('docs/api.md#filename-templates examples: templates', () => {
  it('abc_{n2}.zip gives abc_01.zip, abc_02.zip', () => {
    expect(names('abc_{n2}.zip', 2)).toEqual(['abc_01.zip', 'abc_02.zip']);
  });

  it('photos-{n}-of-{total}.zip gives photos-1-of-5.zip ...', () => {
    expect(names('photos-{n}-of-{total}.zip', 5)).toEqual(range(1, 5, (n) => `photos-${n}-of-5.zip`));
  });

  it('{date}-backup-{n2}.zip gives <date>-backup-01.zip, with the UTC date of creation', () => {
    expect(names('{date}-backup-{n2}.zip', 3)).toEqual(['2024-03-07-backup-01.zip', '2024-03-07-backup-02.zip', '2024-03-07-backup-03.zip']);
    // 23:30 on 7 March in New York is already 8 March in UTC.
    expect(names('{date}.zip', 1, new Date('2024-03-07T23:30:00-05:00'))).toEqual(['2024-03-08.zip']);
  });

  it('{{ and }} render literal braces', () => {
    expect(names('a{{b}}.zip', 1)).toEqual(['a{b}.zip']);
    expect(names('{{{n}}}.zip', 2)).toEqual(['{1}.zip', '{2}.zip']);
    expect(names('x}}{{y', 1)).toEqual(['x}{y']);
  });

  it('{n}, {n2}, {n3} padding; no truncation past the width', () => {
    const out = names('f{n}-{n2}-{n3}.zip', 1000);
    expect(out[0]).toBe('f1-01-001.zip');
    expect(out[99]).toBe('f100-100-100.zip');
    expect(out[999]).toBe('f1000-1000-1000.zip');
  });

  it('a single ZIP renders placeholders with n = 1 and total = 1', () => {
    expect(names('part-{n}-of-{total}.zip', 1)).toEqual(['part-1-of-1.zip']);
    expect(names('abc_{n3}.zip', 1)).toEqual(['abc_001.zip']);
  });

  it('templates with an index placeholder get nothing appended', () => {
    expect(names('part-{n}', 2)).toEqual(['part-1', 'part-2']);
  });

  it('rule 2: a template without index placeholder is rendered once, then the plain _{n} rule applies', () => {
    expect(names('{date}-backup.zip', 3)).toEqual(['2024-03-07-backup_1.zip', '2024-03-07-backup_2.zip', '2024-03-07-backup_3.zip']);
    expect(names('of-{total}.tar.gz', 2)).toEqual(['of-2.tar_1.gz', 'of-2.tar_2.gz']);
    expect(names('{date}', 2)).toEqual(['2024-03-07_1.zip', '2024-03-07_2.zip']);
    expect(names('{date}', 1)).toEqual(['2024-03-07']);
  });

  it('rule 2 with escapes: a{{x}}.zip split', () => {
    expect(names('a{{x}}.zip', 2)).toEqual(['a{x}_1.zip', 'a{x}_2.zip']);
  });
});

describe('errors', () => {
  it('rule 3: unknown placeholders are named', () => {
    for (const [template, shown] of [
      ['abc_{foo}.zip', '{foo}'],
      ['{N}.zip', '{N}'],
      ['{ n }.zip', '{ n }'],
      ['{}.zip', '{}'],
      ['{n4}.zip', '{n4}'],
      ['{id}.zip', '{id}'],
    ] as const) {
      const err = failure(template);
      expect(err.problem).toBe('unknown_placeholder');
      expect(err.message).toContain(`"${shown}"`);
    }
  });

  it('rule 4: unbalanced braces, with the position', () => {
    const open = failure('abc{n.zip');
    expect(open.problem).toBe('unbalanced_braces');
    expect(open.message).toContain('"{" at character 4 is never closed');
    const close = failure('abc}.zip');
    expect(close.problem).toBe('unbalanced_braces');
    expect(close.message).toContain('"}" at character 4 has no opening "{"');
    expect(failure('{n}}.zip').problem).toBe('unbalanced_braces');
    expect(failure('{{n}.zip').problem).toBe('unbalanced_braces');
    expect(failure('{a{n}.zip').problem).toBe('unbalanced_braces');
    expect(failure('{').problem).toBe('unbalanced_braces');
  });

  it('rule 5: expanded names of 1..255 characters', () => {
    expect(names('a'.repeat(255), 1)).toEqual(['a'.repeat(255)]);
    const long = failure(`${'a'.repeat(250)}{date}`);
    expect(long.problem).toBe('name_too_long');
    expect(long.message).toContain('260 characters');
    expect(failure('').problem).toBe('empty_name');
    // 255 characters as code points: 255 emoji are 510 UTF-16 units but fine.
    expect(names('😀'.repeat(255), 1)[0]).toBe('😀'.repeat(255));
    expect(failure('😀'.repeat(256)).problem).toBe('name_too_long');
  });

  it('rule 5: the plain rule can push a name over 255 characters', () => {
    const name = `${'a'.repeat(250)}.zip`; // 254
    expect(names(name, 1)).toEqual([name]);
    const err = failure(name, 9);
    expect(err).toMatchObject({ ok: false, problem: 'name_too_long' });
    expect(err.message).toContain('of 9');
  });

  it('rule 5: no / or \\ in an expanded name', () => {
    expect(failure('a/b.zip')).toMatchObject({ problem: 'name_has_slash' });
    expect(failure('a\\b.zip')).toMatchObject({ problem: 'name_has_slash' });
    expect(failure('dir/{n}.zip', 3).message).toContain('"dir/1.zip"');
  });

  it('control characters, . and .. are not names', () => {
    expect(failure('a\u0000b.zip').problem).toBe('name_has_control_character');
    expect(failure('a\nb.zip').problem).toBe('name_has_control_character');
    expect(failure('.').problem).toBe('name_is_dot');
    expect(failure('..').problem).toBe('name_is_dot');
    expect(names('..', 2)).toEqual(['.._1.zip', '.._2.zip']);
  });

  it('total must be a positive integer (a programming error)', () => {
    expect(() => renderZipFilenames({ template: 'a.zip', jobId: JOB, createdAt: CREATED, total: 0 })).toThrow(RangeError);
    expect(() => renderZipFilenames({ template: 'a.zip', jobId: JOB, createdAt: CREATED, total: 1.5 })).toThrow(RangeError);
    expect(() => utcDate(new Date(Number.NaN))).toThrow(RangeError);
  });
});

describe('parseFilenameTemplate', () => {
  it('returns the parts and whether an index placeholder is present', () => {
    const parsed = parseFilenameTemplate('x-{date}-{n2}{{.zip');
    expect(parsed).toEqual({
      ok: true,
      template: {
        source: 'x-{date}-{n2}{{.zip',
        parts: [
          { type: 'text', text: 'x-' },
          { type: 'placeholder', name: 'date' },
          { type: 'text', text: '-' },
          { type: 'placeholder', name: 'n2' },
          { type: 'text', text: '{.zip' },
        ],
        hasPlaceholders: true,
        hasIndexPlaceholder: true,
      },
    });
    const plain = parseFilenameTemplate('a{{b}}');
    expect(plain.ok && plain.template).toMatchObject({ hasPlaceholders: false, hasIndexPlaceholder: false, parts: [{ type: 'text', text: 'a{b}' }] });
    const total = parseFilenameTemplate('{total}');
    expect(total.ok && total.template).toMatchObject({ hasPlaceholders: true, hasIndexPlaceholder: false });
  });
});

describe('validateZipFilename', () => {
  it('accepts valid values and rejects invalid templates', () => {
    expect(validateZipFilename('photos-{n}-of-{total}.zip').ok).toBe(true);
    expect(validateZipFilename('abc_{x}.zip')).toMatchObject({ ok: false, problem: 'unknown_placeholder' });
    expect(validateZipFilename('abc_{n.zip')).toMatchObject({ ok: false, problem: 'unbalanced_braces' });
  });

  it('rejects values over 255 characters before expanding them', () => {
    expect(validateZipFilename('a'.repeat(256))).toMatchObject({ ok: false, problem: 'too_long' });
    expect(validateZipFilename('a'.repeat(255)).ok).toBe(true);
  });

  it('checks the expansion for a single ZIP by default and for the largest split when asked', () => {
    const name = `${'a'.repeat(248)}.zip`; // 252 characters
    expect(validateZipFilename(name).ok).toBe(true);
    expect(validateZipFilename(name, { maxTotal: 9 }).ok).toBe(true); // _9 -> 254
    expect(validateZipFilename(name, { maxTotal: 99 }).ok).toBe(true); // _99 -> 255
    const err = validateZipFilename(name, { maxTotal: 100 }); // _100 -> 256
    expect(err).toMatchObject({ ok: false, problem: 'name_too_long' });
    // Padding makes every name of the split as long as the last one: ZIP 1 already fails.
    expect(!err.ok && err.message).toContain('256 characters for ZIP 1 of 100');
  });

  it('catches {n} growing past 255 characters only at the last ZIP', () => {
    const name = `${'b'.repeat(248)}{n}.zip`; // 255 as written; 253 + digits of n when rendered
    expect(validateZipFilename(name, { maxTotal: 999 }).ok).toBe(true);
    const err = validateZipFilename(name, { maxTotal: 1000 });
    expect(err).toMatchObject({ ok: false, problem: 'name_too_long' });
    expect(!err.ok && err.message).toContain('256 characters for ZIP 1000 of 1000');
    expect(validateZipFilename(name, { maxTotal: 20_000 })).toMatchObject({ ok: false, problem: 'name_too_long' });
  });

  it('catches bad expansions ({date} pushing the length, slashes)', () => {
    expect(validateZipFilename(`${'c'.repeat(246)}{date}`)).toMatchObject({ ok: false, problem: 'name_too_long' });
    expect(validateZipFilename(`${'c'.repeat(245)}{date}`).ok).toBe(true);
    expect(validateZipFilename('a/{n}.zip', { maxTotal: 20_000 })).toMatchObject({ ok: false, problem: 'name_has_slash' });
  });
});
