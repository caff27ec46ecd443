export const iso = (d: Date): string => d.toISOString();

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** Ids that cannot exist read as NOT_FOUND without asking the database (which would reject them). */
export const isUuid = (value: string | undefined): value is string => value !== undefined && UUID.test(value);
