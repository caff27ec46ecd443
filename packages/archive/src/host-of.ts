/** The origin host of a file's URL (an s3:// URL's bucket), for the per-host connection limit. */
export function hostOf(url: string): string | undefined {
  try {
    return new URL(url).host;
  } catch {
    return undefined;
  }
}
