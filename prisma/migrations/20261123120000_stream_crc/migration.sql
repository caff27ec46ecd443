-- AlterTable
ALTER TABLE "job_files" ADD COLUMN     "crc_prefix" INTEGER,
ADD COLUMN     "crc_prefix_length" BIGINT;
