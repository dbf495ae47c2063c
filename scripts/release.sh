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
# The replace directives to sibling directories stay in library modules: they
# make the repository build as one piece for its developers and are ignored
# for users, who get the required versions from the proxy. Command modules
# (cmd/...) are different: "go install MODULE@VERSION" refuses a go.mod with
# any replace directive, so the release commit drops theirs, and a second
# commit after the tags puts them back for development. Push with
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

# Commands: no replace directive in the released go.mod (go install
# refuses one). Their go.mod is kept as it is now (requirements at VERSION,
# replaces and comments) to be put back after the tags.
saved=$(mktemp -d)
trap 'rm -rf "$saved"' EXIT
cmds=()
for m in "${mods[@]}"; do
  [[ $m == cmd/* ]] || continue
  cmds+=("$m")
  mkdir -p "$saved/$m"
  cp "$m/go.mod" "$saved/$m/go.mod"
  drops=$(cd "$m" && GOWORK=off go mod edit -json | python3 -c 'import json,sys; print(" ".join("-dropreplace=" + r["Old"]["Path"] + ("@" + r["Old"]["Version"] if r["Old"].get("Version") else "") for r in json.load(sys.stdin).get("Replace") or []))')
  if [ -n "$drops" ]; then
    # shellcheck disable=SC2086
    (cd "$m" && GOWORK=off go mod edit $drops)
    echo "release: $m drops its replace directives (go install refuses them)"
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
if [ ${#cmds[@]} -gt 0 ]; then
  for m in "${cmds[@]}"; do cp "$saved/$m/go.mod" "$m/go.mod"; done
  git commit -qam "after release $version: commands build from the checkout again (replace directives back)"
  echo "release: replace directives of ${cmds[*]} restored in a commit after the tags"
fi
echo "release: push with: git push origin HEAD $(for m in "${mods[@]}"; do printf '%s ' "$(tag_of "$m")"; done)"
