-- Destinations (docs/private-sources.md#destination-buckets): a stored job's ZIPs written into a
-- customer's bucket with a source's credentials. No foreign key: a deleted source leaves the id.
ALTER TABLE "jobs" ADD COLUMN "destination_source_id" UUID,
ADD COLUMN "destination_bucket" TEXT,
ADD COLUMN "destination_prefix" TEXT;
