-- Version 2: a partial index over deleted keys, so that Compact (run
-- automatically every 256 deletes) finds old tombstones without scanning
-- every record below the compaction point.

CREATE INDEX ${prefix}kv_tombstones ON ${schema}.${prefix}kv (revision) WHERE deleted;
