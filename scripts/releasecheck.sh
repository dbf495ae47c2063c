#!/usr/bin/env bash
# Simulates a release before any tag exists, as a user would meet it:
#   1. a copy of the tree as it would be committed (the files git tracks or
#      would add: .gitignore'd ones left out; in CI that is HEAD) gets the
#      release's requirements (scripts/release.sh -prepare
#      v0.99.0-check.N: every module requires the others at that version,
#      commands lose their replace directives);
#   2. scripts/releasesim writes every published module
#      (scripts/published-modules.txt) at that version into a file-based GOPROXY;
#   3. for each module, a clean consumer (no replace, no workspace), on the
#      oldest Go that module promises (its go directive: a real older
#      toolchain, fetched through the module proxy like any module), runs
#      `go get MODULE@v0.99.0-check.N`, imports every public package of the module
#      (test kits included) in a test, and passes `go mod tidy`, `go vet`
#      and `go test` (a command module: builds the command);
#   4. every published command is installed as a user without a checkout
#      installs it, `go install MODULE@v0.0.0-sim` from a file proxy holding
#      the release at v0.0.0-sim (a fixed version, so a module cache of its
#      own), and run: `bmcjob --version` must print that version, and a
#      simulated netboot from the spec built into the binary must succeed.
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
origproxy=$(go env GOPROXY)
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

# The tree as git would commit it: tracked files as they are in the working
# tree and new files not ignored (in CI, exactly HEAD), so a change is
# checked before its commit.
copy_tree() {
  mkdir -p "$1"
  git ls-files -z --cached --others --exclude-standard | while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done |
    tar --null -T - -c | tar -x -C "$1"
}
mkdir -p "$tmp/proxy"
copy_tree "$tmp/src"
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
  mapfile -t pkgs < <(cd "$tmp/src/$m" && GOFLAGS=-mod=mod GOPROXY="$(cd "$root" && go env GOPROXY)" go list -f '{{if .GoFiles}}{{.Name}} {{.ImportPath}}{{end}}' ./... | awk 'NF && $1 != "main" {print $2}' | { grep -v '/internal/' || true; } | { grep -v '/internal$' || true; })
  # Commands (package main, outside internal/): built from the consumer.
  mapfile -t cmds < <(cd "$tmp/src/$m" && GOFLAGS=-mod=mod GOPROXY="$(cd "$root" && go env GOPROXY)" go list -f '{{if .GoFiles}}{{.Name}} {{.ImportPath}}{{end}}' ./... | awk 'NF && $1 == "main" {print $2}' | { grep -v '/internal/' || true; })
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
  echo "== releasecheck: $path@$version from a clean consumer on $toolchain (${#pkgs[@]} public packages, ${#cmds[@]} commands)"
  if ! (cd "$c" && export GOTOOLCHAIN=$toolchain && go get "$path@$version" &&
    for cmd in "${cmds[@]}"; do go build -o "$c/bin/" "$cmd" || exit 1; done &&
    go mod tidy && go vet ./... && go test ./... && go version); then
    failed+=("$m")
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "releasecheck FAILED for: ${failed[*]}" >&2
  exit 1
fi

# go install of the published commands, as README's users run it, from a
# file proxy holding the release at v0.0.0-sim. A fixed version needs a
# module cache of its own: the go command treats what it cached of a module
# version (the module and its index) as immutable. Everything else comes
# from the shared module cache's downloads (a file proxy too), then the
# usual proxy.
simversion=v0.0.0-sim
copy_tree "$tmp/simsrc"
(cd "$tmp/simsrc" && bash scripts/release.sh -prepare "$simversion" >/dev/null)
simdirs=()
for m in "${mods[@]}"; do simdirs+=("$tmp/simsrc/$m"); done
(cd "$root/scripts/releasesim" && GOPROXY=$origproxy GOFLAGS= go run . -proxy "$tmp/simproxy" -version "$simversion" "${simdirs[@]}" >/dev/null)
bmcjob=$(cd "$tmp/simsrc/cmd/bmcjob" && go list -m)
(
  cd "$tmp"
  export GOMODCACHE="$tmp/simmodcache" GOBIN="$tmp/simbin" GOFLAGS=-modcacherw GOTOOLCHAIN=local
  export GOPROXY="file://$tmp/simproxy,file://$modcache/cache/download,$origproxy"
  set -x
  go install "$bmcjob@$simversion"
  "$GOBIN/bmcjob" --version
  test "$("$GOBIN/bmcjob" --version)" = "bmcjob $simversion"
  "$GOBIN/bmcjob" spec netboot | "$GOBIN/bmcjob" run -simulate -simulate-power-delay 100ms -spec -
) || { echo "releasecheck FAILED: go install $bmcjob@$simversion, or running it" >&2; exit 1; }
echo "releasecheck ok: ${#mods[@]} modules fetched at $version and built from clean consumers; $bmcjob@$simversion installed and run"
