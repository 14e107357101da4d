-- directaid:no-transaction (each statement alone: the builds do not block writes; see migrate.go)
-- A radius list filtered by kind (type, category or urgency) walks the GiST index as 0014's scoped one
-- does, but those columns were not in it: each candidate cost a heap page. At 1M records a 5 km list of
-- one type and category (1 record in 27) fetched ~830 rows, 803 buffers read, 7.3 ms in EXPLAIN ANALYZE;
-- with them in the index the walk is index-only. Replaces 0014's index (133 MB at 1M records; 156 MB).
CREATE INDEX CONCURRENTLY IF NOT EXISTS directaid_records_loc_kind ON directaid_records USING gist (loc)
	INCLUDE (status, id, emergency_slug, municipio_code, type, category, urgency);
DROP INDEX CONCURRENTLY IF EXISTS directaid_records_loc_scope;
