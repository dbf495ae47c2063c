#!/usr/bin/env bash
# Checks that bmckit's API types work with Kubernetes' standard toolchain,
# controller-gen v0.23.0 (see docs/kubernetes.md):
#
#  (a) the deepcopy code of the core's CRD-embeddable types (conditions, task,
#      timestamp, job.Spec/Status, bmc.Stats) is what `controller-gen object`
#      generates from the committed sources (zz_generated.deepcopy.go);
#  (b) controller-gen (object and crd) runs on the Kubernetes kit's CRD types
#      contrib/kubernetes/api/v1alpha1 (BMCJob, embedding job.Spec and
#      job.Status), its output matches what is committed
#      (api/v1alpha1/zz_generated.deepcopy.go and config/crd/*.yaml), and the
#      contrib/kubernetes and examples/controller modules build and vet;
#  (c) the kit's RBAC, config/rbac/role.yaml, is what `controller-gen rbac`
#      generates from the +kubebuilder:rbac markers in contrib/kubernetes.
#
# It writes nothing into the repository: controller-gen's output goes to a
# temporary directory and is compared with the committed files. To update
# them after changing a type, run it with UPDATE=1 (it then writes the
# generated files in place, and still builds).
#
# controller-gen is installed (go install, into $(go env GOPATH)/bin, or
# $CONTROLLER_GEN_BIN) when the one on PATH or there is not v0.23.0.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
export GOWORK=off

version=v0.23.0
bindir=${CONTROLLER_GEN_BIN:-$(go env GOPATH)/bin}
cg=""
for c in "$(command -v controller-gen || true)" "$bindir/controller-gen"; do
  if [ -n "$c" ] && [ -x "$c" ] && [ "$("$c" --version 2>/dev/null)" = "Version: $version" ]; then
    cg=$c
    break
  fi
done
if [ -z "$cg" ]; then
  echo "== installing controller-gen $version into $bindir"
  GOBIN=$bindir go install "sigs.k8s.io/controller-tools/cmd/controller-gen@$version"
  cg=$bindir/controller-gen
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0

# compare GENERATED COMMITTED: reports and counts a difference.
compare() {
  if [ "${UPDATE:-}" = 1 ]; then
    if ! cmp -s "$1" "$2"; then
      cp "$1" "$2"
      echo "   updated $2"
    fi
    return
  fi
  if ! diff -u "$2" "$1" >"$tmp/diff"; then
    echo "!! $2 differs from what controller-gen $version generates:" >&2
    head -40 "$tmp/diff" >&2
    fail=1
  fi
}

# (a) The core packages, one at a time (an output directory takes one
# package's zz_generated.deepcopy.go).
echo "== controller-gen object: core packages"
for pkg in conditions task timestamp job bmc; do
  mkdir -p "$tmp/core/$pkg"
  "$cg" object paths="./$pkg" output:object:dir="$tmp/core/$pkg"
  if [ ! -f "$tmp/core/$pkg/zz_generated.deepcopy.go" ]; then
    echo "!! controller-gen generated no deepcopy for ./$pkg (markers removed?)" >&2
    fail=1
    continue
  fi
  compare "$tmp/core/$pkg/zz_generated.deepcopy.go" "$pkg/zz_generated.deepcopy.go"
done

# (b) The Kubernetes kit's CRDs.
echo "== controller-gen object crd: contrib/kubernetes/api/v1alpha1"
cd "$root/contrib/kubernetes"
mkdir -p "$tmp/ex/obj" "$tmp/ex/crd"
"$cg" object crd paths=./api/v1alpha1 output:object:dir="$tmp/ex/obj" output:crd:dir="$tmp/ex/crd"
compare "$tmp/ex/obj/zz_generated.deepcopy.go" api/v1alpha1/zz_generated.deepcopy.go
for f in "$tmp"/ex/crd/*.yaml; do
  compare "$f" "config/crd/$(basename "$f")"
done
for f in config/crd/*.yaml; do
  if [ ! -f "$tmp/ex/crd/$(basename "$f")" ]; then
    echo "!! $f is committed but controller-gen no longer generates it" >&2
    fail=1
  fi
done

# (c) The kit's RBAC: config/rbac/role.yaml is what controller-gen generates
# from the +kubebuilder:rbac markers in the kit's packages (the other files
# in config/rbac are written by hand).
echo "== controller-gen rbac: contrib/kubernetes"
mkdir -p "$tmp/ex/rbac"
"$cg" rbac:roleName=bmckit-controller paths=./... output:rbac:dir="$tmp/ex/rbac"
if [ ! -f "$tmp/ex/rbac/role.yaml" ]; then
  echo "!! controller-gen generated no role.yaml for contrib/kubernetes (markers removed?)" >&2
  fail=1
else
  compare "$tmp/ex/rbac/role.yaml" config/rbac/role.yaml
fi

for m in contrib/kubernetes examples/controller; do
  echo "== $m: go build ./... && go vet ./..."
  (cd "$root/$m" && go build -o /dev/null ./... && go vet ./...)
done

if [ "$fail" != 0 ]; then
  echo "== crdcheck FAILED: run UPDATE=1 scripts/crdcheck.sh, review and commit the generated files" >&2
  exit 1
fi
echo "== crdcheck ok"
