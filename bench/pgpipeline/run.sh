#!/usr/bin/env bash
# What one round trip per statement costs a group commit on this machine,
# against the same statements pipelined (docs/storage.md, "Pipelined group
# commit"; docs/benchmarks.md). pgbench runs sqlstore's update statement
# (the revision counter and a compare-and-swap-shaped UPDATE of one of
# 10,000 records of 600 bytes) 50 times per transaction, one client, in a
# scratch schema it drops at the end; "plain" sends one statement per round
# trip, "pipe" sends the 50 together (\startpipeline), alternating.
#
#   bash bench/pgpipeline/run.sh                # 3 rounds of 8 s each
#   ROUNDS=5 SECONDS_PER_RUN=10 DSN=postgres://... bash bench/pgpipeline/run.sh
set -euo pipefail
dsn=${DSN:-postgres://bmckit:bmckit@127.0.0.1:5432/bmckit?sslmode=disable}
rounds=${ROUNDS:-3}
secs=${SECONDS_PER_RUN:-8}
tmp=$(mktemp -d)
trap 'psql -q "$dsn" -c "DROP SCHEMA IF EXISTS bench_pgpipeline CASCADE" >/dev/null 2>&1; rm -rf "$tmp"' EXIT
psql -q "$dsn" <<'SQL' >/dev/null
DROP SCHEMA IF EXISTS bench_pgpipeline CASCADE; CREATE SCHEMA bench_pgpipeline;
CREATE TABLE bench_pgpipeline.meta(id int PRIMARY KEY, revision bigint NOT NULL, compacted bigint NOT NULL);
INSERT INTO bench_pgpipeline.meta VALUES (1, 0, 0);
CREATE TABLE bench_pgpipeline.kv(key text COLLATE "C" PRIMARY KEY, value bytea NOT NULL, revision bigint NOT NULL, deleted bool NOT NULL);
INSERT INTO bench_pgpipeline.kv SELECT 'job/' || i, repeat('x', 600)::bytea, 0, false FROM generate_series(1, 10000) i;
CREATE UNIQUE INDEX ON bench_pgpipeline.kv(revision) WHERE revision > 0;
SQL
stmt="WITH r AS (UPDATE bench_pgpipeline.meta SET revision = revision + 1 WHERE id = 1 AND EXISTS (SELECT 1 FROM bench_pgpipeline.kv WHERE key = 'job/' || :k AND NOT deleted) RETURNING revision) UPDATE bench_pgpipeline.kv SET value = repeat('y', 600)::bytea, revision = (SELECT revision FROM r) WHERE key = 'job/' || :k AND NOT deleted AND EXISTS (SELECT 1 FROM r) RETURNING revision;"
for mode in plain pipe; do
  {
    [ "$mode" = pipe ] && echo '\startpipeline'
    echo 'BEGIN;'
    for _ in $(seq 1 50); do echo '\set k random(1, 10000)'; echo "$stmt"; done
    echo 'COMMIT;'
    [ "$mode" = pipe ] && echo '\endpipeline'
  } >"$tmp/$mode.sql"
done
echo "| round | mode | transactions/s | statements/s | load average |"
echo "|---|---|---|---|---|"
for r in $(seq 1 "$rounds"); do
  for mode in plain pipe; do
    tps=$(pgbench -n -M prepared -c 1 -T "$secs" -f "$tmp/$mode.sql" "$dsn" 2>/dev/null | awk '/^tps/ {print $3}')
    printf '| %d | %s | %.0f | %.0f | %s |\n' "$r" "$mode" "$tps" "$(awk -v t="$tps" 'BEGIN {print t * 50}')" "$(cut -d' ' -f1 /proc/loadavg)"
  done
done
