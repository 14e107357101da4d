-- Counters by emergency and municipio, so that no total counts records (issue 16), as Badger's:
-- - directaid_cells (0011): the rows of a kind are per emergency and municipio too; the row of every kind
--   (type '') stays one per status and cell (emergency and municipio ''), what an unscoped list without a
--   kind filter reads alone. A radius total by emergency or municipio sums that scope's rows of its cells.
-- - directaid_counts (0006): besides its rows of every municipio (municipio_code ''), a record with a
--   municipio counts in a row of its municipio too, which a municipio list's total sums.
-- The columns are named as the records', so that where() filters counters and records alike.

-- The backfill sees every committed record: writes wait for this migration's commit.
LOCK TABLE directaid_records IN SHARE MODE;

TRUNCATE directaid_cells;
ALTER TABLE directaid_cells ADD COLUMN emergency_slug text NOT NULL DEFAULT '',
	ADD COLUMN municipio_code text COLLATE "C" NOT NULL DEFAULT '',
	DROP CONSTRAINT directaid_cells_pkey,
	ADD PRIMARY KEY (status, cell, type, category, urgency, emergency_slug, municipio_code, shard);

DROP FUNCTION directaid_cells_apply(directaid_cell_delta[]);
DROP TYPE directaid_cell_delta;
CREATE TYPE directaid_cell_delta AS (status text, loc point, type text, category text, urgency text,
	emergency_slug text, municipio_code text, d integer);

-- As 0011's, with the kind rows per emergency and municipio; in key order.
CREATE FUNCTION directaid_cells_apply(deltas directaid_cell_delta[]) RETURNS void LANGUAGE sql AS $$
	INSERT INTO directaid_cells AS c (status, cell, type, category, urgency, emergency_slug, municipio_code, shard, n)
	SELECT r.status, (1 << (5 * p)) | (g.code >> (30 - 5 * p)), k.type, k.category, k.urgency, k.emergency_slug, k.municipio_code,
		CASE WHEN p < 6 THEN directaid_shard() ELSE 0 END, sum(r.d)
	FROM unnest(deltas) r
	CROSS JOIN LATERAL (SELECT directaid_geocode((r.loc)[1], (r.loc)[0]) AS code) g
	CROSS JOIN generate_series(4, 6) p
	CROSS JOIN LATERAL (VALUES (r.type, r.category, r.urgency, r.emergency_slug, r.municipio_code), ('', '', '', '', ''))
		k(type, category, urgency, emergency_slug, municipio_code)
	WHERE r.loc IS NOT NULL
	GROUP BY 1, 2, 3, 4, 5, 6, 7, 8 HAVING sum(r.d) <> 0 ORDER BY 1, 2, 3, 4, 5, 6, 7, 8
	ON CONFLICT (status, cell, type, category, urgency, emergency_slug, municipio_code, shard) DO UPDATE SET n = c.n + EXCLUDED.n
$$;

CREATE OR REPLACE FUNCTION directaid_cells_add() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF TG_OP = 'INSERT' THEN
		PERFORM directaid_cells_apply(array(SELECT ROW(status, loc, type, category, urgency, emergency_slug, municipio_code, 1)::directaid_cell_delta
			FROM new_rows));
	ELSIF TG_OP = 'DELETE' THEN
		PERFORM directaid_cells_apply(array(SELECT ROW(status, loc, type, category, urgency, emergency_slug, municipio_code, -1)::directaid_cell_delta
			FROM old_rows));
	ELSE
		PERFORM directaid_cells_apply(array(SELECT ROW(status, loc, type, category, urgency, emergency_slug, municipio_code, 1)::directaid_cell_delta
			FROM new_rows UNION ALL
			SELECT ROW(status, loc, type, category, urgency, emergency_slug, municipio_code, -1)::directaid_cell_delta FROM old_rows));
	END IF;
	RETURN NULL;
END $$;

SELECT directaid_cells_apply(array(SELECT ROW(status, loc, type, category, urgency, emergency_slug, municipio_code, 1)::directaid_cell_delta
	FROM directaid_records));

ALTER TABLE directaid_counts ADD COLUMN municipio_code text COLLATE "C" NOT NULL DEFAULT '',
	DROP CONSTRAINT directaid_counts_pkey,
	ADD PRIMARY KEY (emergency_slug, status, type, category, urgency, municipio_code, shard);

-- A record's rows: of every municipio, then of its own (if it has one), in key order.
CREATE OR REPLACE FUNCTION directaid_count_add(r directaid_records, d integer) RETURNS void LANGUAGE sql AS $$
	INSERT INTO directaid_counts AS c (emergency_slug, status, type, category, urgency, municipio_code, shard, n, people, newest)
	SELECT r.emergency_slug, r.status, r.type, r.category, r.urgency, m.code, directaid_shard(), d,
		CASE WHEN r.type = 'request' AND r.needed_people > 0 THEN d * r.needed_people ELSE 0 END,
		CASE WHEN d > 0 THEN r.created_at END
	FROM (VALUES (''), (nullif(r.municipio_code, ''))) m(code) WHERE m.code IS NOT NULL ORDER BY m.code
	ON CONFLICT (emergency_slug, status, type, category, urgency, municipio_code, shard) DO UPDATE
	SET n = c.n + EXCLUDED.n, people = c.people + EXCLUDED.people, newest = greatest(c.newest, EXCLUDED.newest)
$$;

CREATE OR REPLACE FUNCTION directaid_records_count() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF TG_OP = 'INSERT' THEN
		PERFORM directaid_count_add(NEW, 1);
	ELSIF TG_OP = 'DELETE' THEN
		PERFORM directaid_count_add(OLD, -1);
	ELSIF (OLD.emergency_slug, OLD.status, OLD.type, OLD.category, OLD.urgency, OLD.municipio_code, OLD.needed_people)
		IS DISTINCT FROM (NEW.emergency_slug, NEW.status, NEW.type, NEW.category, NEW.urgency, NEW.municipio_code, NEW.needed_people) THEN
		-- Rows in key order, so that two updates never wait for each other's counter rows crosswise.
		IF (OLD.emergency_slug, OLD.status, OLD.type, OLD.category, OLD.urgency, OLD.municipio_code)
			<= (NEW.emergency_slug, NEW.status, NEW.type, NEW.category, NEW.urgency, NEW.municipio_code) THEN
			PERFORM directaid_count_add(OLD, -1);
			PERFORM directaid_count_add(NEW, 1);
		ELSE
			PERFORM directaid_count_add(NEW, 1);
			PERFORM directaid_count_add(OLD, -1);
		END IF;
	END IF;
	RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION directaid_records_count_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO directaid_counts AS c (emergency_slug, status, type, category, urgency, municipio_code, shard, n, people, newest)
	SELECT emergency_slug, status, type, category, urgency, m.code, directaid_shard(), count(*),
		coalesce(sum(needed_people) FILTER (WHERE type = 'request' AND needed_people > 0), 0), max(created_at)
	FROM inserted CROSS JOIN LATERAL (VALUES (''), (nullif(municipio_code, ''))) m(code) WHERE m.code IS NOT NULL
	GROUP BY 1, 2, 3, 4, 5, 6 ORDER BY 1, 2, 3, 4, 5, 6
	ON CONFLICT (emergency_slug, status, type, category, urgency, municipio_code, shard) DO UPDATE
	SET n = c.n + EXCLUDED.n, people = c.people + EXCLUDED.people, newest = greatest(c.newest, EXCLUDED.newest);
	RETURN NULL;
END $$;

INSERT INTO directaid_counts (emergency_slug, status, type, category, urgency, municipio_code, shard, n, people, newest)
SELECT emergency_slug, status, type, category, urgency, municipio_code, 0, count(*),
	coalesce(sum(needed_people) FILTER (WHERE type = 'request' AND needed_people > 0), 0), max(created_at)
FROM directaid_records WHERE municipio_code <> '' GROUP BY 1, 2, 3, 4, 5, 6;
