// How the S3 stand-in's tests read a refusal: S3's error code and HTTP status, as a real client sees them.

/** The S3 error code and HTTP status a request was refused with (throws when it was accepted). */
export async function refusal(request: Promise<unknown>): Promise<[string, number]> {
  const err = (await request.then(
    () => null,
    (e: unknown) => e,
  )) as { name?: string; $metadata?: { httpStatusCode?: number } } | null;
  if (!err) throw new Error('the request was accepted');
  return [err.name ?? '', err.$metadata?.httpStatusCode ?? 0];
}
