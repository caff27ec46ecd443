// Where a source's secret access key is sealed (its associated data): the sources table's
// sealed column, opened by file-access.ts and re-sealed by sealed-columns.ts.
export const sourceSecretPlace = (id: string) => `sources.secret_access_key:${id}`;
