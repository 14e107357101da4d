-- directaid:no-transaction (each statement alone: the builds do not block writes; see migrate.go)
-- A radius list scoped to an emergency with fewer records in the circle than the page (two emergencies
-- in one city, a person filtering by the smaller) walked 0015's GiST index on loc, which yields every
-- entry of the circle's box nearest first and filters the emergency after: at 1M records of one emergency
-- and 500 of another, that one's 5 km walks at the bench's points read 13,284 buffers (most of them the
-- visibility map, checked per entry) and took 18-31 ms on average in EXPLAIN (ANALYZE, BUFFERS). With the
-- emergency a key column after loc (btree_gist, 0017), the tree is still built by loc alone, but each
-- inner entry holds the range of its subtree's emergencies, so the walk skips the subtrees and leaf pages
-- without the emergency's records: 18 buffers, ~0.1 ms; unscoped walks 38 -> 40 buffers.
-- Replaces 0015's index (157 MB at 1M; 185 MB): no index more to fill per record, where one led by the
-- emergency would be a third GiST (197 MB, one more insertion).
CREATE INDEX CONCURRENTLY IF NOT EXISTS directaid_records_loc_emergency ON directaid_records USING gist (loc, emergency_slug)
	INCLUDE (status, id, municipio_code, type, category, urgency);
DROP INDEX CONCURRENTLY IF EXISTS directaid_records_loc_kind;

-- A radius list filtered by kind (type, category or urgency) reads its cells' kind rows for its total,
-- which 0016's index (the rows of every kind) lacks: through the primary key, every row of its ~100 cells
-- and a heap page each (at 1M records, 5 km, type=request: 3,148 rows, 3,461 buffers, 2.8-6.4 ms). With
-- the kind rows in their own covering index (21 MB at 1M) and pgCells.countsQuery reading them apart from
-- the rows of every kind, two index-only scans: 570-624 buffers, 0.7-1.5 ms.
CREATE INDEX CONCURRENTLY IF NOT EXISTS directaid_cells_kind ON directaid_cells (status, cell, type, category, urgency)
	INCLUDE (emergency_slug, municipio_code, n) WHERE type <> '';
