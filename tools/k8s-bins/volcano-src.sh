#!/usr/bin/env bash
# make k8s-bins (second step): builds Volcano's scheduler and controller manager from a source tree (the Go module
# proxy serves volcano.sh/volcano at v1.10.0 only; HyperNodes arrived in v1.11) into a cache directory of its own,
# keyed by this script and the tree's go.mod/go.sum/SOURCE, so the core cache of build.sh stays valid. Prints the
# directory. The tree is read-only: it is copied, and its dependencies come from the Go module proxy (-mod=mod).
# The tree: $ROCE_FABRIC_VOLCANO_SRC, else ../shared/volcano-src/<version> beside the checkout (for a git worktree,
# beside its main checkout too).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
vcver="v1.15.1"
src="${ROCE_FABRIC_VOLCANO_SRC:-}"
if [ -z "$src" ]; then
  for root in "$here/../.." "$(git -C "$here" rev-parse --path-format=absolute --git-common-dir 2>/dev/null)/.."; do
    [ -f "$root/../shared/volcano-src/$vcver/go.mod" ] && { src="$(cd "$root/../shared/volcano-src/$vcver" && pwd)"; break; }
  done
fi
[ -n "$src" ] && [ -f "$src/go.mod" ] || {
  echo "k8s-bins: no Volcano $vcver source (set ROCE_FABRIC_VOLCANO_SRC or put it in ../shared/volcano-src/$vcver)" >&2
  exit 1
}
key="$(cat "$here/volcano-src.sh" "$src/go.mod" "$src/go.sum" "$src"/../SOURCE 2>/dev/null | sha256sum | cut -c1-12)"
dir="${ROCE_FABRIC_VOLCANO_BINS:-${XDG_CACHE_HOME:-$HOME/.cache}/roce-fabric/k8s-bins/volcano-$vcver-$key}"
if [ "${1:-}" = "--dir" ] || [ -f "$dir/.complete" ]; then echo "$dir"; exit 0; fi
command -v go >/dev/null || PATH="/usr/local/go/bin:$PATH"
command -v go >/dev/null || { echo "k8s-bins: no Go toolchain (go) on PATH" >&2; exit 1; }
start=$(date +%s)
work="$(mktemp -d)"
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
cp -r "$src" "$work/volcano" && chmod -R u+w "$work/volcano"
mkdir -p "$dir/bin" "$dir/crds"
export GOFLAGS="-mod=mod -buildvcs=false -trimpath" CGO_ENABLED=0
# Binary names and -X as Volcano's Makefile (vc-scheduler, vc-controller-manager; pkg/version.Version).
(cd "$work/volcano" && for c in scheduler controller-manager; do
  go build -ldflags="-s -w -X volcano.sh/volcano/pkg/version.Version=$vcver" -o "$dir/bin/vc-$c" "./cmd/$c"
done) >&2
# PodGroup, Queue, Command, Numatopology, Job, HyperNode and the rest of the release's own CRDs
cp "$work/volcano"/config/crd/volcano/bases/*.yaml "$dir/crds/"
echo "$vcver" > "$dir/version"
echo "built in $(( $(date +%s) - start ))s from $src" > "$dir/.complete"
echo "k8s-bins: volcano $(cat "$dir/.complete")" >&2
echo "$dir"
