-- Archive options: compression, WinZip AES-256 encryption (password sealed), learned MACs.
ALTER TABLE "jobs" ADD COLUMN "compression" TEXT NOT NULL DEFAULT 'store',
ADD COLUMN "compression_level" INTEGER,
ADD COLUMN "encryption_method" TEXT,
ADD COLUMN "encryption_password" TEXT,
ADD COLUMN "encryption_seed" BYTEA;

ALTER TABLE "job_files" ADD COLUMN "aes_mac" BYTEA;
