# Developer entry points. `make setup` once on a fresh machine, then `make test`.
.PHONY: setup deps controlplane felix network-policy-api calico-cnp cnp-conformance-build cnp-conformance build test unit integration dataplane e2e lint bench demo cluster-up cluster-down ci image images containers kind-images kind-up kind-down kind-deploy kind-e2e kind-test

# Debian packages the tests need: etcd for the real control plane; iptables, ipset and
# iproute2 for the dataplane tests in network namespaces; iputils-ping (ICMP probes) and conntrack
# (flushing flows between policy rounds) for the differential test; tcpdump, through which the
# agent's denied-flow log reads NFLOG (its netns test and the images' checks need it).
# podman, runc and debootstrap build and run the images (images/, e2e/containers); podman's
# dnsname CNI plugin lets kind's nodes resolve each other (e2e/kind).
DEBIAN_PACKAGES := etcd-server iptables ipset iproute2 iputils-ping conntrack tcpdump ca-certificates chromium podman runc debootstrap golang-github-containernetworking-plugin-dnsname

setup: deps controlplane felix network-policy-api cnp-conformance-build

deps:
	apt-get update
	DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $(DEBIAN_PACKAGES)
	npm ci

# Builds kube-apiserver, kube-controller-manager (the scenario runner's EndpointSlice controller)
# and kubectl into $$HOME/.cache/tessera/controlplane/<version>/ (no-op when cached; build.sh
# prints how long each binary took).
controlplane:
	bash e2e/controlplane/build.sh

# Builds calico-felix (the Calico version bench/felix pins) and copies Calico's own
# crd.projectcalico.org CRDs beside it, into $$HOME/.cache/tessera/felix/<digest>/: the oracle of
# the Felix differential (e2e/felix; no-op when cached, ~1 minute warm).
felix:
	bash e2e/felix/build.sh >/dev/null

# Builds calico-cnp, Calico's own ClusterNetworkPolicy conversion as a filter, into
# $$HOME/.cache/tessera/calico-cnp/<digest>/: the oracle of the randomized converter differential
# (e2e/calico-cnp; ~1 minute cold, seconds warm). Not part of `setup`: the module proxy refuses the
# Calico commit, so it builds from a projectcalico/calico git clone (CALICO_GIT_DIR), which CI
# does not have; without the binary the differential skips, naming this target.
calico-cnp:
	bash e2e/calico-cnp/build.sh >/dev/null

# Downloads sigs.k8s.io/network-policy-api v0.3.0 into Tessera's Go module cache: the upstream
# ClusterNetworkPolicy CRDs e2e/cluster-network-policy-crds.unit.test.ts compares ours with.
network-policy-api:
	bash e2e/network-policy-api.sh >/dev/null

# Builds the upstream ClusterNetworkPolicy conformance suite (go test -c, network-policy-api
# v0.3.0), a static agnhost and its image registry.k8s.io/e2e-test-images/agnhost:2.45 (saved for
# kind load) into $$HOME/.cache/tessera/cnp-conformance/<digest>/ (e2e/cnp-conformance; no-op
# when cached, ~75 s cold).
cnp-conformance-build:
	bash e2e/cnp-conformance/build.sh >/dev/null

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
# The shared examples too when this checkout sits beside ../shared.
SCENARIO_ARGS := $(if $(wildcard ../shared/scenarios/examples.json),--scenarios ../shared/scenarios/examples.json) --scenarios e2e/scenarios/

e2e:
	npm run -s e2e -- $(SCENARIO_ARGS)

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

# A real cluster with kubelets and pods: kind on podman, 1 control plane + 2 workers,
# dual-stack, from a node image and Kubernetes images built here (e2e/kind/; binaries and
# archives cached under $$HOME/.cache/tessera/kind). kind-up prints only `export KUBECONFIG=…`:
# eval "$$(make -s kind-up)"; kind-down deletes the cluster (images stay).
kind-images:
	@bash e2e/kind/build-images.sh >/dev/null
	@bash images/build.sh probe

kind-up:
	@bash e2e/kind/up.sh

kind-down:
	@bash e2e/kind/down.sh

# Installs Tessera as a user does: kind load of the image under the manifests' reference, then
# exactly `kubectl apply -f manifests/`; prints the time from apply to all Ready.
kind-deploy:
	@bash e2e/kind/deploy.sh

# Every scenario on real pods of the kind cluster (kind-up and kind-deploy first).
kind-e2e:
	npm run -s e2e -- --cluster kind $(SCENARIO_ARGS)

# The upstream ClusterNetworkPolicy conformance suite (network-policy-api v0.3.0) on the kind
# cluster with Tessera installed (kind-up and kind-deploy first): per-test table, failing probes
# classified SCTP (no SCTP in this kernel) vs TCP/UDP; fails on anything but SCTP. A subset:
# CNP_CONFORMANCE_TESTS='CNPAdminTierIngressTCP|CNPBaselineTierEgressUDP' (e2e/cnp-conformance).
cnp-conformance: cnp-conformance-build
	@bash e2e/cnp-conformance/run.sh

# Lifecycle on the kind cluster: rolling update, agent restart, uninstall (the last removes
# Tessera; the next run installs it again). Builds, brings up and installs what is missing.
kind-test:
	npm run test:kind

ci:
	CI=true bash .ci/run
