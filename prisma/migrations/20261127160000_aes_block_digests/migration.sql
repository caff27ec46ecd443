-- No AES keystream encrypts two plaintexts (docs/archive-options.md#changed-origins): each
-- entry's salt generation, and the digests of the plaintext blocks each generation encrypted.
ALTER TABLE "job_files" ADD COLUMN "aes_generation" INTEGER NOT NULL DEFAULT 0;

-- CreateTable
CREATE TABLE "job_file_blocks" (
    "job_id" UUID NOT NULL,
    "position" INTEGER NOT NULL,
    "generation" INTEGER NOT NULL,
    "block" INTEGER NOT NULL,
    "digest" BYTEA NOT NULL,

    CONSTRAINT "job_file_blocks_pkey" PRIMARY KEY ("job_id","position","generation","block")
);

-- AddForeignKey
ALTER TABLE "job_file_blocks" ADD CONSTRAINT "job_file_blocks_job_id_fkey" FOREIGN KEY ("job_id") REFERENCES "jobs"("id") ON DELETE CASCADE ON UPDATE CASCADE;
