#!/usr/bin/env bash
# Checks the module graph promises (README "Module layout"):
#   - a user who imports only the core module gets none of the heavy
#     optional dependencies in their module graph (k8s.io/sigs.k8s.io live
#     only in contrib/kubernetes and examples/controller);
#   - the core's go directive is the oldest Go the code needs (go vet's
#     stdversion check in scripts/test.sh catches newer standard-library
#     use; this checks the directive itself did not creep up).
# The bmclib consumer module (examples/bmclibconsumer) is built and tested by
# scripts/test.sh like every module.
set -euo pipefail
cd "$(dirname "$0")/.."
export GOWORK=off

heavy='github.com/stmcginnis/gofish|github.com/bougou/go-ipmi|github.com/bmc-toolbox/bmclib|github.com/jackc/pgx|github.com/prometheus/|go.opentelemetry.io/|k8s.io/|sigs.k8s.io/'
if bad=$(go list -m all | grep -E "^($heavy)"); then
  echo "modcheck: the core module's graph holds heavy optional modules:" >&2
  echo "$bad" >&2
  exit 1
fi

want_go=1.24
got_go=$(go mod edit -json | sed -n 's/^[[:space:]]*"Go": "\(.*\)",*$/\1/p')
if [ "$got_go" != "$want_go" ]; then
  echo "modcheck: core go directive is $got_go, want $want_go (raise it here only if the code needs it)" >&2
  exit 1
fi
echo "modcheck: core module graph is lean, go $got_go"
