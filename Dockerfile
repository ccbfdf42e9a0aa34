# The Onceline app for `docker compose up` (see docker-compose.yml). Two stages: build with the
# dev dependencies, run with production dependencies only.
FROM node:22-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json nest-cli.json ./
COPY scripts ./scripts
COPY src ./src
RUN npm run build && npm prune --omit=dev

FROM node:22-bookworm-slim
WORKDIR /app
ENV NODE_ENV=production
# Inside a container the published port arrives on its network interface, not loopback.
ENV HOST=0.0.0.0
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
# The migrator reads migrations/ at the package root (next to package.json)
COPY migrations ./migrations
COPY bin ./bin
USER node
EXPOSE 3000
CMD ["node", "dist/main.js", "all"]
