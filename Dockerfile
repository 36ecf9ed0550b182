# The tessera image: one binary (`tessera controllers`, `tessera agent`, `tessera version`, …)
# running the compiled build: dist/ from `npm run build` (build.mjs — tsc type-checks,
# esbuild bundles src/ with its npm dependencies), so the image holds no TypeScript, no tsx
# and no node_modules. The agent needs iptables and ipset (both backends; it detects the one the node uses)
# and iproute2 (`ip addr` for its IP families, `ip route` to find each pod's interface).
#
#   podman build -t tessera .
#   podman build --build-arg BASE_IMAGE=<registry>/node:20-bookworm-slim -t tessera .
#
# Stack traces name the bundle's chunks; run with NODE_OPTIONS=--enable-source-maps to see
# src/ file names and lines instead (dist/ ships the source maps).
ARG BASE_IMAGE=node:20-bookworm-slim

FROM ${BASE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY build.mjs tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npm run build

FROM ${BASE_IMAGE}
RUN apt-get update \
 && apt-get install -y --no-install-recommends iptables ipset iproute2 \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
ENV NODE_ENV=production
# package.json: `tessera version` reads the version from it.
COPY package.json ./
COPY bin ./bin
COPY --from=build /app/dist ./dist
# `tessera demo` reads the example shop.
COPY examples ./examples
# `tessera` on PATH, so `kubectl exec … -- tessera <command>` works as the entrypoint does.
RUN ln -s /app/bin/tessera.js /usr/local/bin/tessera
# The controllers run as 65532 (see manifests/30-controllers.yaml); the agent as root
# with NET_ADMIN/NET_RAW only.
USER 65532:65532
ENTRYPOINT ["tessera"]
CMD ["--help"]
