# Developer entry points. `make setup` once on a fresh machine, then `make test`.
.PHONY: setup deps controlplane build test unit integration dataplane e2e lint bench demo cluster-up cluster-down ci image images containers kind-images kind-up kind-down

# Debian packages the tests need: etcd for the real control plane; iptables, ipset and
# iproute2 for the dataplane tests in network namespaces; iputils-ping (ICMP probes) and conntrack
# (flushing flows between policy rounds) for the differential test.
# podman, runc and debootstrap build and run the images (images/, e2e/containers); podman's
# dnsname CNI plugin lets kind's nodes resolve each other (e2e/kind).
DEBIAN_PACKAGES := etcd-server iptables ipset iproute2 iputils-ping conntrack ca-certificates chromium podman runc debootstrap golang-github-containernetworking-plugin-dnsname

setup: deps controlplane

deps:
	apt-get update
	DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $(DEBIAN_PACKAGES)
	npm ci

# Builds kube-apiserver + kubectl into $$HOME/.cache/tessera/controlplane/<version>/ (no-op when cached).
controlplane:
	bash e2e/controlplane/build.sh

# Builds dist/ (build.mjs: tsc type-checks, esbuild bundles): what bin/tessera.js and the image run.
# `npm test` builds first (its pretest script).
build:
	npm run build

test:
	npm test

unit:
	npx vitest run --project unit

integration:
	npx vitest run --project integration

# Real iptables/ipset in network namespaces with TCP/UDP probes (root).
dataplane:
	npx vitest run --project dataplane

# The scenario runner: real control plane, controllers and one agent per node as processes,
# pods as network namespaces, every probe a real TCP/UDP connection.
e2e:
	npm run -s e2e -- --scenarios ../shared/scenarios/examples.json --scenarios e2e/scenarios/

# localhost/tessera:<version> with podman, on the debootstrap base localhost/debian:bookworm
# (images/base.sh, cached under $$HOME/.cache/tessera/images). No registry needed.
image:
	bash images/build.sh tessera

# image, plus localhost/tessera-controlplane:<Kubernetes version> for the containers suite.
images: controlplane
	bash images/build.sh all

# The testcontainers suite (e2e/containers): builds the images first (warm: seconds).
containers:
	npx vitest run --project containers

lint:
	npm run lint

bench:
	npm run bench

demo:
	npm run demo

# Prints only `export KUBECONFIG=…` on stdout: eval "$$(make -s cluster-up)"
cluster-up:
	@npx tsx e2e/controlplane/cli.ts up

cluster-down:
	@npx tsx e2e/controlplane/cli.ts down

# A real cluster with kubelets and pods: kind on podman, 1 control plane + 2 workers, from a
# node image and Kubernetes images built here (e2e/kind/; binaries and archives cached under
# $$HOME/.cache/tessera/kind). kind-up prints only `export KUBECONFIG=…`:
# eval "$$(make -s kind-up)"; kind-down deletes the cluster (images stay).
kind-images:
	@bash e2e/kind/build-images.sh >/dev/null

kind-up:
	@bash e2e/kind/up.sh

kind-down:
	@bash e2e/kind/down.sh

ci:
	CI=true bash .ci/run
