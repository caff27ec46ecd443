-- Prefix entries (docs/private-sources.md#prefix-entries): how many of the entries as given
-- were s3:// prefixes, so that the job (and a retry of it) goes through preparing to list them.
ALTER TABLE "jobs" ADD COLUMN "prefix_entries" INTEGER NOT NULL DEFAULT 0;
