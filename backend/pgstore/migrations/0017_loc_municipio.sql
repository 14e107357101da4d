-- directaid:no-transaction (each statement alone: the builds do not block writes; see migrate.go)
-- A radius list scoped to a municipio walked 0015's GiST index on loc, which yields every entry of the
-- circle's box nearest first and filters the municipio after: at a point outside the municipio, or where it
-- holds fewer records than the page, the walk read every entry of the box (at 1M records ~16,700 entries,
-- 13,041 buffers, 25 ms in EXPLAIN (ANALYZE, BUFFERS) for municipio 66001 at 5.07,-75.52, 5 km). Led by
-- the municipio (btree_gist), the walk descends to that municipio's entries alone: 27 buffers, 0.6 ms.
-- btree_gist is a trusted extension (PostgreSQL 13+): a database owner without superuser creates it, as
-- pg_trgm in 0002. No WHERE municipio_code <> '': a generic plan (the walk's) cannot prove a parameter
-- non-empty, and would not use a partial index.
CREATE EXTENSION IF NOT EXISTS btree_gist;
CREATE INDEX CONCURRENTLY IF NOT EXISTS directaid_records_loc_municipio ON directaid_records USING gist (municipio_code, loc)
	INCLUDE (status, id, emergency_slug, type, category, urgency);
