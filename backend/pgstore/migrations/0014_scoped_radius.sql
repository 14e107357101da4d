-- A radius list scoped to an emergency or a municipio (issue 15; at 50k records of 1M density it cost
-- ~12 ms of PostgreSQL per list, the unscoped one ~1 ms):
-- - its KNN walk filters by them too: with them in the GiST index the walk stays index-only, where each
--   candidate cost a heap page (and the planner, which estimates any `loc <@ box` at 0.1% of the rows,
--   read and sorted the whole box instead: ~17k records, 4,000 buffers). Replaces 0013's index.
-- - its total read every kind row of the circle's cells (~2,700 rows for ~100 cells): the row of every
--   kind (type '') of a cell is now one per emergency and municipio (no more rows per write), which such
--   a list filters and an unscoped one sums.

-- Writes wait for this migration's commit: the counters are rewritten from themselves.
LOCK TABLE directaid_records IN SHARE MODE;

-- As 0012's, with the row of every kind in the record's emergency and municipio.
CREATE OR REPLACE FUNCTION directaid_cells_apply(deltas directaid_cell_delta[]) RETURNS void LANGUAGE sql AS $$
	INSERT INTO directaid_cells AS c (status, cell, type, category, urgency, emergency_slug, municipio_code, shard, n)
	SELECT r.status, (1 << (5 * p)) | (g.code >> (30 - 5 * p)), k.type, k.category, k.urgency, r.emergency_slug, r.municipio_code,
		CASE WHEN p < 6 THEN directaid_shard() ELSE 0 END, sum(r.d)
	FROM unnest(deltas) r
	CROSS JOIN LATERAL (SELECT directaid_geocode((r.loc)[1], (r.loc)[0]) AS code) g
	CROSS JOIN generate_series(4, 6) p
	CROSS JOIN LATERAL (VALUES (r.type, r.category, r.urgency), ('', '', '')) k(type, category, urgency)
	WHERE r.loc IS NOT NULL
	GROUP BY 1, 2, 3, 4, 5, 6, 7, 8 HAVING sum(r.d) <> 0 ORDER BY 1, 2, 3, 4, 5, 6, 7, 8
	ON CONFLICT (status, cell, type, category, urgency, emergency_slug, municipio_code, shard) DO UPDATE SET n = c.n + EXCLUDED.n
$$;

-- Every record has a type: its kind rows, summed, are the new rows of every kind.
DELETE FROM directaid_cells WHERE type = '';
INSERT INTO directaid_cells (status, cell, type, category, urgency, emergency_slug, municipio_code, shard, n)
SELECT status, cell, '', '', '', emergency_slug, municipio_code, shard, sum(n) FROM directaid_cells
GROUP BY status, cell, emergency_slug, municipio_code, shard HAVING sum(n) <> 0;

-- (IF: TestCountersFollowWrites applies this again.)
CREATE INDEX IF NOT EXISTS directaid_records_loc_scope ON directaid_records USING gist (loc) INCLUDE (status, id, emergency_slug, municipio_code);
DROP INDEX IF EXISTS directaid_records_loc_cover;
