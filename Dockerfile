# One image for every service; the command picks the service (docker-compose.yml, k8s/).
# The Node version is pinned here once; docs/operations.md#deployment-files says why Node 24.
ARG NODE_IMAGE=node:24.21.0-bookworm-slim

FROM ${NODE_IMAGE} AS build
# A C compiler for packages/crc32 (the CRC-32 addon, built by `pnpm install` against this
# Node's own headers): only this stage has it; the runtime stage copies the built addon.
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ && rm -rf /var/lib/apt/lists/*
WORKDIR /src
RUN npm install -g pnpm@12.21.0
COPY package.json pnpm-lock.yaml pnpm-workspace.yaml prisma.config.ts tsconfig.base.json tsconfig.json ./
COPY prisma ./prisma
COPY scripts ./scripts
COPY patches ./patches
COPY packages ./packages
COPY services ./services
# Bundles every service and operator command, then gathers what runs into /runtime
# (scripts/runtime-image.ts): no node_modules but the CRC-32 addon.
RUN pnpm install --frozen-lockfile && pnpm build:runtime /runtime

FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production
# The environment scripts/services.ts gives every service (a test compares).
ENV MALLOC_MMAP_THRESHOLD_=131072
WORKDIR /app
# Owned by root and read-only to the service user.
COPY --from=build /runtime /app
# The spill area's mount point (FETCH_SPILL_DIR in docker-compose and k8s), the service user's:
# a volume mounted there starts with this owner.
RUN mkdir /var/spill && chown node:node /var/spill
USER node
EXPOSE 3000 8081
# docker-compose and k8s set the command per service (with its V8 flags, scripts/services.ts); migrations:
# `node dist/migrate.js`; the first user: `node dist/admin.js users create --email E --plan P`.
CMD ["node", "--liftoff-only", "--max-semi-space-size=2", "--heap-growing-percent=50", "services/api/dist/main.js"]
