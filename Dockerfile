# One image for every service; the command picks the service.
FROM node:20-bookworm-slim AS deps
WORKDIR /app
RUN npm install -g pnpm@12.21.0
COPY package.json pnpm-lock.yaml pnpm-workspace.yaml prisma.config.ts tsconfig.base.json tsconfig.json ./
COPY prisma ./prisma
COPY scripts ./scripts
COPY patches ./patches
COPY packages ./packages
COPY services ./services
RUN pnpm install --frozen-lockfile

FROM node:20-bookworm-slim AS runtime
ENV NODE_ENV=production
WORKDIR /app
COPY --from=deps /app /app
USER node
EXPOSE 3000 8081
# docker-compose and k8s override the command per service.
CMD ["node", "--import", "tsx", "services/api/src/main.ts"]
