#!/usr/bin/env bash
# Runs bmckit's whole test suite on a fresh Debian machine (or a developer's).
#
# It installs what the tests use for real peers (PostgreSQL, ipmitool,
# OpenIPMI's ipmi_sim) when it runs as root with apt-get available, starts a
# PostgreSQL server on 127.0.0.1:5432 with a bmckit role and database (and a
# second cluster on 5433 for the restart test), checks the module graph
# (scripts/modcheck.sh), simulates a release (scripts/releasecheck.sh: every
# published module fetched at a fake tag from a clean consumer on its oldest
# Go, and `go install .../cmd/bmcjob@v0.0.0-sim` from the simulated proxy, run)
# and the generated Kubernetes code (scripts/crdcheck.sh),
# runs `go vet` and `go test -race ./...` in every
# module of the repository (scripts/doccheck's test is the doc check: every
# package doc's Go code block compiles and every name a doc comment uses
# exists, in every module), then scripts/simulators-clients.sh (the Redfish
# simulator against redfishtool and sushy) when those are installed or CI=true.
# Extra arguments go to `go test`.
#
# Environment the tests read:
#   BMCKIT_TEST_POSTGRES_DSN  PostgreSQL DSN for storage/sqlstore tests
#   BMCKIT_TEST_POSTGRES_RESTART_DSN, BMCKIT_TEST_POSTGRES_RESTART_CLUSTER
#                             a dedicated cluster ("<version> <name>" for
#                             pg_ctlcluster) that job's restart test restarts
#   KUBEBUILDER_ASSETS        kube-apiserver and etcd for the real-API-server
#                             tests (contrib/kubernetes); set from
#                             scripts/kube-binaries.sh when unset: built (about
#                             20 min, then cached outside the repository) when
#                             CI=true or BMCKIT_KUBE_BUILD=1, else used only if
#                             already cached
#   CI=true                   tests that need a real peer fail instead of skipping
set -euo pipefail
cd "$(dirname "$0")/.."

need_pkgs=()
command -v ipmitool >/dev/null 2>&1 || need_pkgs+=(ipmitool)
command -v ipmi_sim >/dev/null 2>&1 || need_pkgs+=(openipmi)
ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1 || need_pkgs+=(postgresql)
command -v redfishtool >/dev/null 2>&1 || need_pkgs+=(redfishtool)
/usr/bin/python3 -c 'import sushy' >/dev/null 2>&1 || need_pkgs+=(python3-sushy)
if [ ${#need_pkgs[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "== installing ${need_pkgs[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq "${need_pkgs[@]}" >/dev/null
  else
    echo "== not root or no apt-get: tests needing ${need_pkgs[*]} will skip" >&2
  fi
fi

# PostgreSQL: start the Debian cluster and create the test role and database.
if [ -z "${BMCKIT_TEST_POSTGRES_DSN:-}" ] && [ "$(id -u)" = 0 ] && command -v pg_lsclusters >/dev/null 2>&1; then
  ver=$(ls /usr/lib/postgresql | sort -n | tail -1)
  # The cluster on 5432 (the restart test's own cluster on 5433 sorts first
  # by name, so pick by port).
  if ! pg_lsclusters -h | awk '$3 == 5432' | grep -q .; then
    pg_createcluster "$ver" main -p 5432 >/dev/null
  fi
  cluster=$(pg_lsclusters -h | awk '$3 == 5432 {print $1" "$2; exit}')
  pg_ctlcluster $cluster start 2>/dev/null || true
  for _ in $(seq 1 50); do
    pg_isready -h 127.0.0.1 -p 5432 -q && break
    sleep 0.2
  done
  su postgres -c "psql -qtAc \"SELECT 1 FROM pg_roles WHERE rolname='bmckit'\"" | grep -q 1 ||
    su postgres -c "psql -qc \"CREATE ROLE bmckit LOGIN PASSWORD 'bmckit' CREATEDB\""
  su postgres -c "psql -qtAc \"SELECT 1 FROM pg_database WHERE datname='bmckit'\"" | grep -q 1 ||
    su postgres -c "psql -qc \"CREATE DATABASE bmckit OWNER bmckit\""
  export BMCKIT_TEST_POSTGRES_DSN="postgres://bmckit:bmckit@127.0.0.1:5432/bmckit?sslmode=disable"
fi

# A second, dedicated cluster on 5433 that job's PostgreSQL-restart test stops
# and starts mid-run (restarting the shared one would break other packages'
# tests running in parallel). Same role and database as the main one.
if [ -z "${BMCKIT_TEST_POSTGRES_RESTART_DSN:-}" ] && [ "$(id -u)" = 0 ] && command -v pg_lsclusters >/dev/null 2>&1; then
  ver=$(ls /usr/lib/postgresql | sort -n | tail -1)
  if ! pg_lsclusters -h "$ver" bmckit_restart 2>/dev/null | grep -q .; then
    pg_createcluster "$ver" bmckit_restart -p 5433 >/dev/null
  fi
  pg_ctlcluster "$ver" bmckit_restart start >/dev/null 2>&1 || true
  for _ in $(seq 1 50); do
    pg_isready -h 127.0.0.1 -p 5433 -q && break
    sleep 0.2
  done
  su postgres -c "psql -p 5433 -qtAc \"SELECT 1 FROM pg_roles WHERE rolname='bmckit'\"" | grep -q 1 ||
    su postgres -c "psql -p 5433 -qc \"CREATE ROLE bmckit LOGIN PASSWORD 'bmckit' CREATEDB\""
  su postgres -c "psql -p 5433 -qtAc \"SELECT 1 FROM pg_database WHERE datname='bmckit'\"" | grep -q 1 ||
    su postgres -c "psql -p 5433 -qc \"CREATE DATABASE bmckit OWNER bmckit\""
  export BMCKIT_TEST_POSTGRES_RESTART_DSN="postgres://bmckit:bmckit@127.0.0.1:5433/bmckit?sslmode=disable"
  export BMCKIT_TEST_POSTGRES_RESTART_CLUSTER="$ver bmckit_restart"
fi

# kube-apiserver and etcd for contrib/kubernetes' tests against a real API
# server (kubetest): built from the Go module proxy and cached by version.
if [ -z "${KUBEBUILDER_ASSETS:-}" ]; then
  if [ "${CI:-}" = true ] || [ "${BMCKIT_KUBE_BUILD:-}" = 1 ]; then
    echo "== scripts/kube-binaries.sh"
    KUBEBUILDER_ASSETS=$(bash scripts/kube-binaries.sh)
    export KUBEBUILDER_ASSETS
  elif d=$(bash scripts/kube-binaries.sh --cached); then
    export KUBEBUILDER_ASSETS=$d
  else
    echo "== no cached kube-apiserver/etcd: the real-API-server tests skip (BMCKIT_KUBE_BUILD=1 builds them, about 20 min)" >&2
  fi
fi

# The repository is several Go modules (see README "Module layout"). Each is
# vetted and tested on its own, with GOWORK=off, exactly as a user's module
# would build it: its own go.mod and go.sum, no workspace. A failing module
# does not stop the others; the script fails at the end if any did.
bash scripts/modcheck.sh
# A release simulated with a file-based GOPROXY: every published module
# fetched at a fake tag and built from a clean consumer on its oldest Go.
bash scripts/releasecheck.sh
# The Go files git would commit (tracked ones that still exist, and new
# ones not ignored), or every Go file outside a git checkout.
gofiles() {
  if git rev-parse --git-dir >/dev/null 2>&1; then
    git ls-files --cached --others --exclude-standard '*.go' | while IFS= read -r f; do [ -e "$f" ] && echo "$f"; done
  else
    find . -name '*.go' -not -path './.git/*'
  fi
}
unformatted=$(gofiles | xargs -r gofmt -l)
if [ -n "$unformatted" ]; then
  echo "== gofmt: these files need gofmt -w:" >&2
  echo "$unformatted" >&2
  exit 1
fi
# controller-gen v0.23.0 on the core types and the example CRD: the committed
# deepcopy and CRD YAML must match what it generates, and compile.
bash scripts/crdcheck.sh
failed=()
for m in $(find . -name go.mod -not -path './.git/*' -not -path '*/testdata/*' -printf '%h\n' | sort); do
  echo "== $m: go vet ./... && go test -race ./... $*"
  if ! (cd "$m" && GOWORK=off go vet ./... && GOWORK=off go test -race -timeout 30m "$@" ./...); then
    failed+=("$m")
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "== FAILED modules: ${failed[*]}" >&2
  exit 1
fi

# The simulators against independent clients (redfishtool, sushy, ipmitool):
# always in CI, elsewhere when all are installed.
if [ "${CI:-}" = true ] || { command -v redfishtool >/dev/null 2>&1 && /usr/bin/python3 -c 'import sushy' 2>/dev/null && command -v ipmitool >/dev/null 2>&1; }; then
  echo "== scripts/simulators-clients.sh"
  bash scripts/simulators-clients.sh
else
  echo "== redfishtool, python3-sushy or ipmitool missing: skipping scripts/simulators-clients.sh" >&2
fi
