#!/usr/bin/env bash
# Cuts a release: every published module (scripts/published-modules.txt)
# requires the others at VERSION, then one commit and one tag per module in
# dependency order (the core "VERSION", a sub-module "DIR/VERSION", as Go's
# multi-module tagging requires).
#
#   scripts/release.sh v0.1.0            rewrite requirements, commit, tag
#   scripts/release.sh -prepare v0.1.0   only rewrite requirements (used by
#                                        scripts/releasecheck.sh on a copy)
#
# The replace directives to sibling directories stay: they make the
# repository build as one piece for its developers and are ignored for users,
# who get the required versions from the proxy. Push with
#   git push origin main $(scripts/release.sh -tags v0.1.0)
set -euo pipefail
cd "$(dirname "$0")/.."
prepare_only=false
print_tags=false
case "${1:-}" in
  -prepare) prepare_only=true; shift ;;
  -tags) print_tags=true; shift ;;
esac
version=${1:?usage: scripts/release.sh [-prepare|-tags] vX.Y.Z}
if ! [[ $version =~ ^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]]; then
  echo "release: $version is not a semantic version vX.Y.Z" >&2
  exit 2
fi
mapfile -t mods < <(grep -v '^#' scripts/published-modules.txt | sed '/^$/d')
tag_of() { if [ "$1" = . ]; then echo "$version"; else echo "$1/$version"; fi; }
if $print_tags; then
  for m in "${mods[@]}"; do tag_of "$m"; done
  exit 0
fi
paths=()
for m in "${mods[@]}"; do paths+=("$(cd "$m" && GOWORK=off go list -m)"); done

# Every module of the repository (published or not) that requires a
# published one gets it at VERSION.
for gm in $(find . -name go.mod -not -path './.git/*' | sort); do
  dir=$(dirname "$gm")
  reqs=$(cd "$dir" && GOWORK=off go mod edit -json | python3 -c 'import json,sys; print("\n".join(r["Path"] for r in json.load(sys.stdin).get("Require") or []))')
  edits=()
  for p in "${paths[@]}"; do
    if grep -qx "$p" <<<"$reqs"; then edits+=("-require=$p@$version"); fi
  done
  if [ ${#edits[@]} -gt 0 ]; then
    (cd "$dir" && GOWORK=off go mod edit "${edits[@]}")
    echo "release: $dir requires ${#edits[@]} bmckit module(s) at $version"
  fi
done
$prepare_only && exit 0

if [ -n "$(git status --porcelain --untracked-files=no | grep -v 'go.mod$' || true)" ]; then
  echo "release: the working tree has changes other than go.mod files; commit them first" >&2
  exit 1
fi
git commit -qam "release $version: modules require each other at $version"
for m in "${mods[@]}"; do
  t=$(tag_of "$m")
  git tag -a "$t" -m "bmckit $t"
  echo "release: tagged $t"
done
echo "release: push with: git push origin HEAD $(for m in "${mods[@]}"; do printf '%s ' "$(tag_of "$m")"; done)"
