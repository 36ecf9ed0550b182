# The tessera image: one binary (`tessera controllers`, `tessera agent`, …) run from the
# TypeScript sources with tsx, as bin/tessera.js does. The agent needs iptables and ipset
# (nft backend, as current distributions and kube-proxy default to).
FROM node:20-bookworm-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts && npm cache clean --force

FROM node:20-bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends iptables ipset \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
ENV NODE_ENV=production
COPY --from=deps /app/node_modules ./node_modules
COPY package.json ./
COPY bin ./bin
COPY src ./src
# The controllers run as 65532 (see manifests/30-controllers.yaml); the agent as root
# with NET_ADMIN/NET_RAW only.
USER 65532:65532
ENTRYPOINT ["node", "bin/tessera.js"]
CMD ["--help"]
