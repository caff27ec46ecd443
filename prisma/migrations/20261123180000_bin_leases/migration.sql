-- AlterTable
ALTER TABLE "zips" ADD COLUMN     "lease_owner" TEXT,
ADD COLUMN     "lease_expires_at" TIMESTAMPTZ(3);
