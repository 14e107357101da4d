-- directaid:no-transaction (each statement alone: the builds do not block writes; see migrate.go)
-- A radius list without a kind filter reads the rows of every kind (type '') of ~100 cells for its total
-- (pgCells.countsQuery). Those are 4% of directaid_cells (10k of 270k rows at 1M records); through the
-- primary key each cell cost a descent of the whole index and a heap page: at 1M records a 5 km list's
-- counters read 420 buffers, 123 of them from the OS, 1.0 ms in EXPLAIN ANALYZE. This index holds only
-- them, with what the unscoped and scoped sums read (600 kB at 1M): 210 buffers, all cached, 0.25 ms,
-- index-only once VACUUM has marked the pages all-visible.
CREATE INDEX CONCURRENTLY IF NOT EXISTS directaid_cells_every_kind ON directaid_cells (status, cell)
	INCLUDE (emergency_slug, municipio_code, n) WHERE type = '';
