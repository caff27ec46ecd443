-- AlterTable
ALTER TABLE "job_files" ADD COLUMN     "headers" TEXT,
ADD COLUMN     "header_names" TEXT,
ADD COLUMN     "source_id" UUID;

-- CreateTable
CREATE TABLE "sources" (
    "id" UUID NOT NULL,
    "user_id" UUID NOT NULL,
    "name" VARCHAR(64) NOT NULL,
    "type" VARCHAR(16) NOT NULL,
    "region" VARCHAR(64) NOT NULL,
    "endpoint" TEXT,
    "force_path_style" BOOLEAN NOT NULL DEFAULT false,
    "access_key_id" TEXT NOT NULL,
    "secret_access_key" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "sources_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "sources_user_id_name_key" ON "sources"("user_id", "name");

-- AddForeignKey
ALTER TABLE "sources" ADD CONSTRAINT "sources_user_id_fkey" FOREIGN KEY ("user_id") REFERENCES "users"("id") ON DELETE CASCADE ON UPDATE CASCADE;
