-- CreateSchema
CREATE SCHEMA IF NOT EXISTS "public";

-- CreateEnum
CREATE TYPE "Plan" AS ENUM ('free', 'starter', 'pro', 'scale');

-- CreateEnum
CREATE TYPE "JobStatus" AS ENUM ('preparing', 'pending', 'processing', 'completed', 'failed');

-- CreateEnum
CREATE TYPE "ZipStatus" AS ENUM ('pending', 'processing', 'completed', 'failed');

-- CreateEnum
CREATE TYPE "JobMode" AS ENUM ('stored', 'stream');

-- CreateEnum
CREATE TYPE "SplitStrategy" AS ENUM ('preserve-order', 'ffd');

-- CreateEnum
CREATE TYPE "UsageKind" AS ENUM ('stored_byte_seconds', 'stream_bytes');

-- CreateTable
CREATE TABLE "users" (
    "id" UUID NOT NULL,
    "email" TEXT NOT NULL,
    "password_hash" TEXT,
    "plan" "Plan" NOT NULL DEFAULT 'free',
    "overage_enabled" BOOLEAN NOT NULL DEFAULT false,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "users_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "api_keys" (
    "id" UUID NOT NULL,
    "user_id" UUID NOT NULL,
    "name" VARCHAR(255) NOT NULL DEFAULT '',
    "key_hash" BYTEA NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "expires_at" TIMESTAMPTZ(3),
    "last_used_at" TIMESTAMPTZ(3),
    "revoked_at" TIMESTAMPTZ(3),

    CONSTRAINT "api_keys_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "jobs" (
    "id" UUID NOT NULL,
    "user_id" UUID NOT NULL,
    "status" "JobStatus" NOT NULL,
    "mode" "JobMode" NOT NULL DEFAULT 'stored',
    "zip_filename" VARCHAR(255),
    "expires_in" INTEGER NOT NULL,
    "fail_on_url_error" BOOLEAN NOT NULL DEFAULT true,
    "metadata" JSONB,
    "max_zip_size_bytes" BIGINT,
    "split_strategy" "SplitStrategy" NOT NULL DEFAULT 'preserve-order',
    "allow_oversize_zips" BOOLEAN NOT NULL DEFAULT true,
    "fail_on_zip_error" BOOLEAN NOT NULL DEFAULT true,
    "url_count" INTEGER NOT NULL,
    "file_count" INTEGER NOT NULL DEFAULT 0,
    "zip_count" INTEGER NOT NULL DEFAULT 0,
    "total_size" BIGINT NOT NULL DEFAULT 0,
    "error" TEXT,
    "attempt" INTEGER NOT NULL DEFAULT 0,
    "enqueued_at" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "completed_at" TIMESTAMPTZ(3),
    "expires_at" TIMESTAMPTZ(3) NOT NULL,
    "purged_at" TIMESTAMPTZ(3),

    CONSTRAINT "jobs_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "job_files" (
    "job_id" UUID NOT NULL,
    "position" INTEGER NOT NULL,
    "url" TEXT NOT NULL,
    "filename" TEXT,
    "size" BIGINT,
    "etag" TEXT,
    "last_modified" TEXT,
    "entry_name" TEXT,
    "crc32" INTEGER,
    "zip_id" TEXT,
    "error" TEXT,

    CONSTRAINT "job_files_pkey" PRIMARY KEY ("job_id","position")
);

-- CreateTable
CREATE TABLE "zips" (
    "id" TEXT NOT NULL,
    "job_id" UUID NOT NULL,
    "sequence" INTEGER NOT NULL,
    "status" "ZipStatus" NOT NULL DEFAULT 'pending',
    "filename" VARCHAR(255) NOT NULL,
    "file_count" INTEGER NOT NULL DEFAULT 0,
    "size" BIGINT,
    "planned_size" BIGINT,
    "object_key" TEXT,
    "upload_id" TEXT,
    "etag" TEXT,
    "error" TEXT,
    "attempt" INTEGER NOT NULL DEFAULT 0,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "completed_at" TIMESTAMPTZ(3),

    CONSTRAINT "zips_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "zip_parts" (
    "zip_id" TEXT NOT NULL,
    "upload_id" TEXT NOT NULL,
    "part_number" INTEGER NOT NULL,
    "etag" TEXT NOT NULL,
    "size" BIGINT NOT NULL,
    "offset" BIGINT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "zip_parts_pkey" PRIMARY KEY ("zip_id","upload_id","part_number")
);

-- CreateTable
CREATE TABLE "usage_records" (
    "id" BIGSERIAL NOT NULL,
    "user_id" UUID NOT NULL,
    "kind" "UsageKind" NOT NULL,
    "month" DATE NOT NULL,
    "amount" BIGINT NOT NULL,
    "job_id" UUID,
    "zip_id" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "usage_records_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "webhooks" (
    "id" UUID NOT NULL,
    "user_id" UUID NOT NULL,
    "url" TEXT NOT NULL,
    "secret" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "deleted_at" TIMESTAMPTZ(3),

    CONSTRAINT "webhooks_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "users_email_key" ON "users"("email");

-- CreateIndex
CREATE UNIQUE INDEX "api_keys_key_hash_key" ON "api_keys"("key_hash");

-- CreateIndex
CREATE INDEX "api_keys_user_id_created_at_idx" ON "api_keys"("user_id", "created_at");

-- CreateIndex
CREATE INDEX "jobs_user_id_created_at_id_idx" ON "jobs"("user_id", "created_at" DESC, "id" DESC);

-- CreateIndex
CREATE INDEX "jobs_user_id_status_created_at_id_idx" ON "jobs"("user_id", "status", "created_at" DESC, "id" DESC);

-- CreateIndex
CREATE INDEX "jobs_status_updated_at_idx" ON "jobs"("status", "updated_at");

-- CreateIndex
CREATE INDEX "jobs_expires_at_idx" ON "jobs"("expires_at");

-- CreateIndex
CREATE INDEX "job_files_zip_id_idx" ON "job_files"("zip_id");

-- CreateIndex
CREATE UNIQUE INDEX "zips_job_id_sequence_key" ON "zips"("job_id", "sequence");

-- CreateIndex
CREATE INDEX "usage_records_user_id_kind_month_idx" ON "usage_records"("user_id", "kind", "month");

-- CreateIndex
CREATE INDEX "webhooks_user_id_idx" ON "webhooks"("user_id");

-- AddForeignKey
ALTER TABLE "api_keys" ADD CONSTRAINT "api_keys_user_id_fkey" FOREIGN KEY ("user_id") REFERENCES "users"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "jobs" ADD CONSTRAINT "jobs_user_id_fkey" FOREIGN KEY ("user_id") REFERENCES "users"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "job_files" ADD CONSTRAINT "job_files_job_id_fkey" FOREIGN KEY ("job_id") REFERENCES "jobs"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "job_files" ADD CONSTRAINT "job_files_zip_id_fkey" FOREIGN KEY ("zip_id") REFERENCES "zips"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "zips" ADD CONSTRAINT "zips_job_id_fkey" FOREIGN KEY ("job_id") REFERENCES "jobs"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "zip_parts" ADD CONSTRAINT "zip_parts_zip_id_fkey" FOREIGN KEY ("zip_id") REFERENCES "zips"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "usage_records" ADD CONSTRAINT "usage_records_user_id_fkey" FOREIGN KEY ("user_id") REFERENCES "users"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "webhooks" ADD CONSTRAINT "webhooks_user_id_fkey" FOREIGN KEY ("user_id") REFERENCES "users"("id") ON DELETE CASCADE ON UPDATE CASCADE;

