-- directaid:no-transaction (each statement alone: the builds do not block writes; see migrate.go)
-- One GiST index for every radius walk in place of 0017's (municipio_code, loc) and 0018's
-- (loc, emergency_slug): the tree is built by loc, and each inner entry holds the range of its subtree's
-- emergencies and municipios (btree_gist), so a walk scoped to either skips the subtrees without its
-- records. One GiST insertion a publication instead of two. At 1M records (TestPGProbe's points, 5 km,
-- EXPLAIN (ANALYZE, BUFFERS) of the generic walk): 194 + 185 MB -> 190 MB; unscoped, eje-cafetero and a
-- 500-record emergency 37 / 41 / 21 buffers as before; municipio 66001 17 -> 28, 17001 (mostly outside
-- the circles) 7 -> 7. POST new/64 on that database, 15,000 records after a checkpoint: 23,700 -> 19,500
-- WAL bytes a record (half the GiST pages to write once after each checkpoint).
CREATE INDEX CONCURRENTLY IF NOT EXISTS directaid_records_loc_scopes ON directaid_records USING gist (loc, emergency_slug, municipio_code)
	INCLUDE (status, id, type, category, urgency);
DROP INDEX CONCURRENTLY IF EXISTS directaid_records_loc_municipio;
DROP INDEX CONCURRENTLY IF EXISTS directaid_records_loc_emergency;
