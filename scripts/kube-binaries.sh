#!/usr/bin/env bash
# Builds the real kube-apiserver and etcd that the Kubernetes tests run against
# (contrib/kubernetes/kubetest, examples/controller), from the Go module proxy,
# and prints the directory that holds them: export it as KUBEBUILDER_ASSETS.
#
# Debian packages neither binary and envtest's downloader needs the internet,
# so both are built from their published Go modules:
#   - k8s.io/kubernetes at KUBE_VERSION: its go.mod replaces every k8s.io/*
#     staging module with ./staging/...; the module zip has no staging tree, so
#     the script drops those replaces and requires the published k8s.io/*
#     modules at the matching v0.x version instead.
#   - go.etcd.io/etcd/server/v3 at ETCD_VERSION: the same with its "=> ../"
#     replaces of the other etcd modules.
# Each build is `GOWORK=off GOFLAGS=-mod=mod go build`; kube-apiserver takes
# about 20 minutes on two busy cores, etcd about 2.
#
# The binaries are cached by version outside the repository, in
#   ${BMCKIT_KUBE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/bmckit/kube}/kube-<KUBE_VERSION>-etcd-<ETCD_VERSION>/
# so a machine that has them does not rebuild; the script then prints the
# directory at once. Concurrent runs wait for each other (flock).
#
# Usage: export KUBEBUILDER_ASSETS="$(bash scripts/kube-binaries.sh)"
#        bash scripts/kube-binaries.sh --cached   # print the directory only if
#                                                  # already built (exit 1 if not)
# Progress goes to stderr; only the directory goes to stdout.
set -euo pipefail

KUBE_VERSION=${KUBE_VERSION:-v1.37.2}
ETCD_VERSION=${ETCD_VERSION:-v3.7.3}
cache_root=${BMCKIT_KUBE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/bmckit/kube}
dir="$cache_root/kube-$KUBE_VERSION-etcd-$ETCD_VERSION"

have() { [ -x "$dir/kube-apiserver" ] && [ -x "$dir/etcd" ]; }
if have; then
  echo "$dir"
  exit 0
fi
if [ "${1:-}" = --cached ]; then
  exit 1
fi

mkdir -p "$cache_root"
exec 9>"$cache_root/.lock"
flock 9
if have; then # another run built them while this one waited
  echo "$dir"
  exit 0
fi

# The staging modules of k8s.io/kubernetes vX.Y.Z are published as v0.Y.Z.
staging_version="v0.${KUBE_VERSION#v1.}"
work=$(mktemp -d "$cache_root/.build.XXXXXX")
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT

# build MODULE VERSION REPLACE_PREFIX REPLACE_VERSION PACKAGE OUTPUT
# Copies MODULE@VERSION out of the module cache, drops the replace directives
# whose target starts with REPLACE_PREFIX, requires those modules at
# REPLACE_VERSION instead, and builds PACKAGE into OUTPUT.
build() {
  local mod=$1 ver=$2 prefix=$3 repver=$4 pkg=$5 out=$6 src name
  echo "== kube-binaries: downloading $mod@$ver" >&2
  src=$(cd "$work" && GOWORK=off GOFLAGS= go mod download -json "$mod@$ver" |
    sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')
  if [ -z "$src" ] || [ ! -f "$src/go.mod" ]; then
    echo "kube-binaries: go mod download $mod@$ver gave no module directory" >&2
    exit 1
  fi
  name=$(basename "$out")
  cp -r "$src" "$work/$name-src"
  chmod -R u+w "$work/$name-src"
  (
    cd "$work/$name-src"
    # replace lines inside a block ("old => new") or single ("replace old => new")
    awk -v p="$prefix" '
      $1 == "replace" && $3 == "=>" && index($4, p) == 1 { print $2 }
      $2 == "=>" && index($3, p) == 1 { print $1 }' go.mod |
      while read -r m; do
        go mod edit -dropreplace="$m" -require="$m@$repver"
      done
    if grep -q "=> $prefix" go.mod; then
      echo "kube-binaries: $mod@$ver still has local replaces after editing go.mod" >&2
      exit 1
    fi
    echo "== kube-binaries: building $pkg of $mod@$ver (this takes a while)" >&2
    GOWORK=off GOFLAGS=-mod=mod go build -trimpath -o "$out" "$pkg"
  )
}

build k8s.io/kubernetes "$KUBE_VERSION" ./ "$staging_version" ./cmd/kube-apiserver "$work/out/kube-apiserver"
build go.etcd.io/etcd/server/v3 "$ETCD_VERSION" ../ "$ETCD_VERSION" . "$work/out/etcd"
"$work/out/kube-apiserver" --version >&2
"$work/out/etcd" --version >&2
rm -rf "$dir"
mv "$work/out" "$dir"
echo "$dir"
