#!/usr/bin/env bash
# Builds the Felix side of `npm run bench -- calc-vs-felix` (main.go here, which imports Felix's
# calculation graph from github.com/projectcalico/calico at the version go.mod pins) into
#   ${TESSERA_CACHE:-$HOME/.cache/tessera}/felix-bench/<digest of go.mod, go.sum, main.go>/
# and prints the binary's path on its last line (progress goes to stderr). Does nothing when that
# binary is already there. Modules come from the Go module proxy into the same module cache as
# e2e/controlplane/build.sh's. Go is used only for test and bench tools; no product code is Go.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cache="${TESSERA_CACHE:-$HOME/.cache/tessera}"
digest="$(cat "$here/go.mod" "$here/go.sum" "$here/main.go" | sha256sum | cut -c1-16)"
out_dir="$cache/felix-bench/$digest"
bin="$out_dir/felix-calc-bench"

if [[ -x "$bin" ]]; then
  echo "$bin"
  exit 0
fi

mkdir -p "$cache/felix-bench"
exec 9>"$cache/felix-bench/.build.lock"
flock 9
if [[ -x "$bin" ]]; then
  echo "$bin"
  exit 0
fi

source "$here/../../e2e/go-env.sh"
# go.mod/go.sum are complete (go mod tidy); -mod=readonly fails loudly instead of editing them.
export GOFLAGS=-mod=readonly

echo "build.sh: $("$go_bin" version); building the Felix calc-graph bench" >&2
start=$SECONDS
mkdir -p "$out_dir"
(cd "$here" && "$go_bin" build -trimpath -o "$bin.tmp" .) >&2
mv "$bin.tmp" "$bin"
echo "build.sh: built in $((SECONDS - start)) s" >&2
echo "$bin"
