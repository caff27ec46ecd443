-- Archive formats and contents (decisions.md "Formats and contents"): the job's format, the
-- empty folders it includes (a JSON array of names ending in "/", null for none) and whether
-- it ends with a manifest.csv.
ALTER TABLE "jobs" ADD COLUMN "format" TEXT NOT NULL DEFAULT 'zip',
ADD COLUMN "folders" JSONB,
ADD COLUMN "manifest" BOOLEAN NOT NULL DEFAULT false;
