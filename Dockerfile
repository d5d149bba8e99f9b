# One image for every process: the command picks the API, the worker, or the migration.
# Two stages: the build stage has the dev dependencies and compiles TypeScript to dist/; the image
# keeps only dist/ and the production dependencies, and runs plain node (no TypeScript loader).

FROM node:24-bookworm-slim AS build
WORKDIR /src
COPY package.json package-lock.json ./
# The install's postinstall applies patches/ (patch-package); the bundles carry the patched files.
COPY patches ./patches
RUN npm ci --no-audit --no-fund
COPY tsconfig.json ./
COPY api ./api
COPY core ./core
COPY db ./db
COPY workers ./workers
COPY scripts ./scripts
RUN npm run build

FROM node:24-bookworm-slim
ENV NODE_ENV=production
# Stack traces name the TypeScript files and lines (dist/ carries source maps).
ENV NODE_OPTIONS=--enable-source-maps
WORKDIR /app
COPY package.json package-lock.json ./
# Dev dependencies (tsx, esbuild, tests, drizzle-kit, anvil, solc) stay out of the image. The
# postinstall applies patches/ here too (patch-package is a production dependency for this), so
# node_modules matches what the bundles carry.
COPY patches ./patches
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force
COPY --from=build /src/dist ./dist
# The image runs as the unprivileged user of the node image; it writes nothing to /app.
USER node
EXPOSE 3000
# The API's own /health (200 when Postgres, Redis and the chains answer). A worker container
# overrides it (docker-compose.yml) with its metrics endpoint's answer.
HEALTHCHECK --interval=10s --timeout=5s --start-period=10s --retries=5 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||3000)+'/health').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
# node itself is the container's process (not npm, not a shell): `docker stop`'s SIGTERM reaches the
# service, which finishes in-flight work and exits. Heap limits: README → Memory and heap limits.
CMD ["node", "--max-old-space-size=128", "--max-semi-space-size=8", "dist/api/main.js"]
