#!/usr/bin/env bash
# Simulates a release before any tag exists, as a user would meet it:
#   1. a copy of the committed tree (git archive HEAD) gets the release's
#      requirements (scripts/release.sh -prepare v0.99.0-check.N: every
#      module requires the others at that version);
#   2. scripts/releasesim writes every published module
#      (scripts/published-modules.txt) at that version into a file-based GOPROXY;
#   3. for each module, a clean consumer (no replace, no workspace), on the
#      oldest Go that module promises (its go directive: a real older
#      toolchain, fetched through the module proxy like any module), runs
#      `go get MODULE@v0.99.0-check.N`, imports every public package of the module
#      (test kits included) in a test, and passes `go mod tidy`, `go vet`
#      and `go test`.
# It also checks that no published module imports another module's
# internal/ packages. Part of scripts/test.sh (so of CI).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
# A version of its own per run: the go command caches what it learned about
# a module version (its module index) as if the version were immutable.
version=v0.99.0-check.$(date +%s)
tmp=$(mktemp -d)
# The module cache keeps what it downloaded forever, so a fake version of
# our own modules from an earlier run would be used instead of this tree's:
# forget our modules (only ours) before and after.
modcache=$(go env GOMODCACHE)
forget() { chmod -R u+w "$modcache/github.com/bmckit" "$modcache/cache/download/github.com/bmckit" 2>/dev/null || true; rm -rf "$modcache/github.com/bmckit" "$modcache/cache/download/github.com/bmckit"; }
forget
trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"; forget' EXIT
mapfile -t mods < <(grep -v '^#' scripts/published-modules.txt | sed '/^$/d')

# No published module imports another module's internal packages.
bad=0
for m in "${mods[@]}"; do
  path=$(cd "$m" && GOWORK=off go list -m)
  # Direct imports of the module's own packages, tests included (what a
  # package of the core uses internally is the core's business).
  imports=$(cd "$m" && GOWORK=off go list -f '{{join .Imports "\n"}}{{"\n"}}{{join .TestImports "\n"}}{{"\n"}}{{join .XTestImports "\n"}}' ./... | grep '^github.com/bmckit/bmckit/.*internal' | sort -u || true)
  for imp in $imports; do
    # An internal package at any depth (job/internal/powerpoll) is fine when
    # it belongs to this module; the go command knows which module owns it.
    owner=$(cd "$m" && GOWORK=off go list -f '{{with .Module}}{{.Path}}{{end}}' "$imp")
    if [ "$owner" != "$path" ]; then echo "releasecheck: $m imports $imp (internal to module $owner)" >&2; bad=1; fi
  done
done
[ $bad = 0 ] || exit 1

mkdir -p "$tmp/src" "$tmp/proxy"
git archive HEAD | tar -x -C "$tmp/src"
(cd "$tmp/src" && bash scripts/release.sh -prepare "$version" >/dev/null)
dirs=()
for m in "${mods[@]}"; do dirs+=("$tmp/src/$m"); done
(cd scripts/releasesim && GOWORK=off go run . -proxy "$tmp/proxy" -version "$version" "${dirs[@]}")

local_minor=$(go env GOVERSION | sed -E 's/^go([0-9]+\.[0-9]+).*/\1/')
export GOWORK=off GONOSUMDB=github.com/bmckit GOPROXY="file://$tmp/proxy,$(go env GOPROXY)" GOFLAGS="-mod=mod $(go env GOFLAGS)"
failed=()
for m in "${mods[@]}"; do
  path=$(cd "$tmp/src/$m" && go list -m)
  goline=$(cd "$tmp/src/$m" && go mod edit -json | python3 -c 'import json,sys; print(json.load(sys.stdin)["Go"])')
  minor=$(sed -E 's/^([0-9]+\.[0-9]+).*/\1/' <<<"$goline")
  toolchain=local
  if [ "$minor" != "$local_minor" ]; then
    toolchain=go$goline
    [[ $goline =~ ^[0-9]+\.[0-9]+$ ]] && toolchain=go$goline.0
  fi
  # Public packages: not internal, not commands, not test-only.
  mapfile -t pkgs < <(cd "$tmp/src/$m" && GOFLAGS=-mod=mod GOPROXY="$(cd "$root" && go env GOPROXY)" go list -f '{{if .GoFiles}}{{.Name}} {{.ImportPath}}{{end}}' ./... | awk 'NF && $1 != "main" {print $2}' | grep -v '/internal/' | grep -v '/internal$')
  c="$tmp/consumer-$(tr / - <<<"$m")"
  mkdir -p "$c"
  printf 'module example.com/consumer\n\ngo %s\n' "$goline" >"$c/go.mod"
  {
    echo "package consumer"
    echo
    echo "import ("
    echo '	"testing"'
    echo
    for p in "${pkgs[@]}"; do echo "	_ \"$p\""; done
    echo ")"
    echo
    echo "func TestImportsEveryPublicPackage(t *testing.T) {}"
  } >"$c/consumer_test.go"
  echo "== releasecheck: $path@$version from a clean consumer on $toolchain (${#pkgs[@]} public packages)"
  if ! (cd "$c" && export GOTOOLCHAIN=$toolchain && go get "$path@$version" && go mod tidy && go vet ./... && go test ./... && go version); then
    failed+=("$m")
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "releasecheck FAILED for: ${failed[*]}" >&2
  exit 1
fi
echo "releasecheck ok: ${#mods[@]} modules fetched at $version and built from clean consumers"
