-- AlterTable
ALTER TABLE "zips" ADD COLUMN     "upload_layout" TEXT;
