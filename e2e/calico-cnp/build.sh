#!/usr/bin/env bash
# Builds calico-cnp (main.go here; README.md): Calico's own ClusterNetworkPolicy conversion as a
# stdin/stdout filter, the oracle of e2e/calico-cnp's differential, into
#   ${TESSERA_CACHE:-$HOME/.cache/tessera}/calico-cnp/<digest>/calico-cnp
# and prints that directory on its last line (progress goes to stderr). No-op when it is there.
#
# Calico comes from a git checkout, not the module proxy: the proxy refuses every pseudo-version
# of github.com/projectcalico/calico at the commits that have the ClusterNetworkPolicy converter
# (403 "This module version is not available"; README.md). So the Calico commit in
# calico.commit is exported (`git archive`, only go.mod, go.sum, api/, lib/, libcalico-go/) from
# the bare repository $CALICO_GIT_DIR (default: the session mirror) into the cache, beside this
# program, and go.mod's replace directives point at it. Its dependencies come from the module
# proxy into Tessera's module cache (go-env.sh); go.sum pins them and -mod=readonly keeps it so.
# Nothing fetched is committed.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cache="${TESSERA_CACHE:-$HOME/.cache/tessera}"
commit="$(tr -d '[:space:]' <"$here/calico.commit")"
digest="$(cat "$here/go.mod" "$here/go.sum" "$here/main.go" "$here/calico.commit" | sha256sum | cut -c1-16)"
out_dir="$cache/calico-cnp/$digest"

if [[ -x "$out_dir/calico-cnp" ]]; then
  echo "$out_dir"
  exit 0
fi

git_dir="${CALICO_GIT_DIR:-/work/.mirror/projectcalico+calico/repo}"
if ! git -C "$git_dir" cat-file -e "$commit^{commit}" 2>/dev/null; then
  echo "build.sh: no git repository of projectcalico/calico holding $commit at $git_dir (set CALICO_GIT_DIR to a clone)" >&2
  exit 1
fi

mkdir -p "$cache/calico-cnp"
exec 9>"$cache/calico-cnp/.build.lock"
flock 9
if [[ -x "$out_dir/calico-cnp" ]]; then
  echo "$out_dir"
  exit 0
fi

source "$here/../go-env.sh"
export GOFLAGS=-mod=readonly

start=$SECONDS
src="$out_dir/src"
rm -rf "$src"
mkdir -p "$src/calico"
cp "$here/main.go" "$here/go.mod" "$here/go.sum" "$src/"
git -C "$git_dir" archive "$commit" go.mod go.sum api lib libcalico-go | tar -x -C "$src/calico"
echo "build.sh: $("$go_bin" version); building calico-cnp against Calico $commit" >&2
(cd "$src" && "$go_bin" build -trimpath -o "$out_dir/calico-cnp.tmp" .) >&2
rm -rf "$src"
mv "$out_dir/calico-cnp.tmp" "$out_dir/calico-cnp"
echo "build.sh: built in $((SECONDS - start)) s" >&2
echo "$out_dir"
