# Sourced by the scripts that build Go test and bench tools (e2e/controlplane/build.sh,
# e2e/kind/build-kube.sh, bench/felix/build.sh): finds the Go toolchain as $go_bin (PATH, else
# /usr/local/go/bin; exits 1 naming the caller when there is none) and points Go at Tessera's
# caches, so every tool shares one module download cache and one build cache:
#   GOMODCACHE=$cache/go/mod, GOCACHE=$cache/go/build (caller sets $cache).
# GOTOOLCHAIN=local: the machine's Go, never one a go.mod asks for. CGO is off. GOFLAGS is the
# caller's (its -mod policy differs). GOPROXY stays at its default, the module proxy.
go_bin="$(command -v go || true)"
if [[ -z "$go_bin" && -x /usr/local/go/bin/go ]]; then go_bin=/usr/local/go/bin/go; fi
if [[ -z "$go_bin" ]]; then
  echo "$(basename "$0"): no Go toolchain found (looked in PATH and /usr/local/go/bin)" >&2
  exit 1
fi
export GOTOOLCHAIN=local CGO_ENABLED=0
export GOMODCACHE="$cache/go/mod" GOCACHE="$cache/go/build"
