# One image for every process: the command picks the API, the worker, or the migration.
FROM node:24-bookworm-slim
ENV NODE_ENV=production
WORKDIR /app
COPY package.json package-lock.json ./
# tsx runs the TypeScript sources; dev dependencies (tests, drizzle-kit, anvil, solc) stay out of the image.
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force
COPY api ./api
COPY core ./core
COPY db ./db
COPY workers ./workers
# .dockerignore leaves out scripts/local-chain/ (development only): the image refuses NETWORK=local.
COPY scripts ./scripts
COPY tsconfig.json ./
USER node
EXPOSE 3000
# node itself is the container's process (not npm, not a shell): `docker stop`'s SIGTERM reaches the
# service, which finishes in-flight work and exits. tsx is loaded as a hook, not as a parent process.
CMD ["node", "--import", "tsx", "api/main.ts"]
