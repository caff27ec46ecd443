# One image for every service; the command picks the service.
FROM node:20-bookworm-slim AS deps
# A C compiler for packages/crc32 (the CRC-32 addon, built by `pnpm install` against this
# Node's own headers): only this stage has it; the runtime stage copies the built addon.
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ && rm -rf /var/lib/apt/lists/*
WORKDIR /app
RUN npm install -g pnpm@12.21.0
COPY package.json pnpm-lock.yaml pnpm-workspace.yaml prisma.config.ts tsconfig.base.json tsconfig.json ./
COPY prisma ./prisma
COPY scripts ./scripts
COPY patches ./patches
COPY packages ./packages
COPY services ./services
# The services run as bundles (scripts/services.ts), built once here.
RUN pnpm install --frozen-lockfile && pnpm build

FROM node:20-bookworm-slim AS runtime
ENV NODE_ENV=production
# Freed multi-MiB buffers go back to the OS (scripts/services.ts SERVICE_ENV, decisions.md "Operations").
ENV MALLOC_MMAP_THRESHOLD_=131072
WORKDIR /app
COPY --from=deps /app /app
USER node
EXPOSE 3000 8081
# docker-compose and k8s override the command per service (the packer adds V8 flags).
CMD ["node", "services/api/dist/main.js"]
