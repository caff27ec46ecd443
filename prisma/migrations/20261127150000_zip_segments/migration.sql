-- Segments (docs/segments.md): a big stored bin packed by several packers at once.
ALTER TABLE "zips" ADD COLUMN "segment_bytes" BIGINT;

CREATE TABLE "zip_segments" (
    "zip_id" TEXT NOT NULL,
    "index" INTEGER NOT NULL,
    "attempt" INTEGER NOT NULL,
    "status" "ZipStatus" NOT NULL DEFAULT 'pending',
    "lease_owner" TEXT,
    "lease_expires_at" TIMESTAMPTZ(3),
    "admitted_at" TIMESTAMPTZ(3),
    "bytes_done" BIGINT NOT NULL DEFAULT 0,
    "crcs" JSONB,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "zip_segments_pkey" PRIMARY KEY ("zip_id","index")
);

ALTER TABLE "zip_segments" ADD CONSTRAINT "zip_segments_zip_id_fkey" FOREIGN KEY ("zip_id") REFERENCES "zips"("id") ON DELETE CASCADE ON UPDATE CASCADE;
