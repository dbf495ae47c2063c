-- Version 1: the key-value table, the store-wide revision counter and the
-- compaction point. ${schema} and ${prefix} are replaced by Options.Schema
-- and Options.TablePrefix (validated identifiers).

CREATE TABLE ${schema}.${prefix}meta (
	id        integer PRIMARY KEY CHECK (id = 1),
	-- Last revision handed out. Writers take this row's lock first, so
	-- revisions commit in order (see docs/storage.md).
	revision  bigint  NOT NULL,
	-- Tombstones up to this revision have been forgotten.
	compacted bigint  NOT NULL
);

INSERT INTO ${schema}.${prefix}meta (id, revision, compacted) VALUES (1, 0, 0);

CREATE TABLE ${schema}.${prefix}kv (
	-- COLLATE "C": byte order, the order Go sorts strings in, and lets
	-- LIKE 'prefix%' use the primary-key index.
	key      text COLLATE "C" PRIMARY KEY,
	value    bytea   NOT NULL,
	revision bigint  NOT NULL,
	-- Deleted keys stay as tombstones for the change feed until compacted.
	deleted  boolean NOT NULL DEFAULT false
);

CREATE UNIQUE INDEX ${prefix}kv_revision ON ${schema}.${prefix}kv (revision);
