-- Counters per geohash cell, as the Badger store keeps them (badgerstore/cells.go), so that the total of
-- a radius list is decided by store.RadiusTotal from counters instead of counting the circle. Per status,
-- cell (precisions 4, 5 and 6) and kind (type, category, urgency), plus one row of every kind (type '')
-- per status and cell, which a list without those filters reads alone. Kept by statement triggers in the
-- transaction of every write; each statement adds to its rows in key order. Cells of precision 6 hold a
-- hundred records at 1M and are rarely written at once: one row (shard 0). Coarser ones are hot: a row per
-- connection (directaid_shard(), 0008), summed by readers.
CREATE TABLE directaid_cells (
	status   text NOT NULL,
	cell     integer NOT NULL,  -- 1 << 5·precision | the geohash's bits (pgstore.cellKey)
	type     text NOT NULL,
	category text NOT NULL,
	urgency  text NOT NULL,
	shard    smallint NOT NULL,
	n        bigint NOT NULL,
	PRIMARY KEY (status, cell, type, category, urgency, shard)
);

-- The 30 bits of a point's 6-character geohash (store.Geohash), longitude first. The sums may round
-- across a cell's side; the sides are multiples of 2^-13 degrees, so comparing with them settles it
-- exactly as the geohash's bisection does.
CREATE FUNCTION directaid_geocode(lat float8, lon float8) RETURNS integer LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
DECLARE
	y integer := least(greatest(floor((lat + 90) / 180 * 32768), 0), 32767);
	x integer := least(greatest(floor((lon + 180) / 360 * 32768), 0), 32767);
	code integer := 0;
BEGIN
	IF lat < y * (180 / 32768::float8) - 90 THEN
		y := y - 1;
	ELSIF y < 32767 AND lat >= (y + 1) * (180 / 32768::float8) - 90 THEN
		y := y + 1;
	END IF;
	IF lon < x * (360 / 32768::float8) - 180 THEN
		x := x - 1;
	ELSIF x < 32767 AND lon >= (x + 1) * (360 / 32768::float8) - 180 THEN
		x := x + 1;
	END IF;
	FOR i IN REVERSE 14..0 LOOP
		code := (code << 2) | (((x >> i) & 1) << 1) | ((y >> i) & 1); -- operators of one precedence: parenthesised
	END LOOP;
	RETURN code;
END $$;

-- A change of records for the counters: +1 or -1 of a record's status, place and kind.
CREATE TYPE directaid_cell_delta AS (status text, loc point, type text, category text, urgency text, d integer);

-- Adds the changes to the counters of their cells at the three precisions, of their kind and of every
-- kind, summed per row (changes that cancel out write nothing), in key order.
CREATE FUNCTION directaid_cells_apply(deltas directaid_cell_delta[]) RETURNS void LANGUAGE sql AS $$
	INSERT INTO directaid_cells AS c (status, cell, type, category, urgency, shard, n)
	SELECT r.status, (1 << (5 * p)) | (g.code >> (30 - 5 * p)), k.type, k.category, k.urgency,
		CASE WHEN p < 6 THEN directaid_shard() ELSE 0 END, sum(r.d)
	FROM unnest(deltas) r
	CROSS JOIN LATERAL (SELECT directaid_geocode((r.loc)[1], (r.loc)[0]) AS code) g
	CROSS JOIN generate_series(4, 6) p
	CROSS JOIN LATERAL (VALUES (r.type, r.category, r.urgency), ('', '', '')) k(type, category, urgency)
	WHERE r.loc IS NOT NULL
	GROUP BY 1, 2, 3, 4, 5, 6 HAVING sum(r.d) <> 0 ORDER BY 1, 2, 3, 4, 5, 6
	ON CONFLICT (status, cell, type, category, urgency, shard) DO UPDATE SET n = c.n + EXCLUDED.n
$$;

CREATE FUNCTION directaid_cells_add() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF TG_OP = 'INSERT' THEN
		PERFORM directaid_cells_apply(array(SELECT ROW(status, loc, type, category, urgency, 1)::directaid_cell_delta FROM new_rows));
	ELSIF TG_OP = 'DELETE' THEN
		PERFORM directaid_cells_apply(array(SELECT ROW(status, loc, type, category, urgency, -1)::directaid_cell_delta FROM old_rows));
	ELSE
		PERFORM directaid_cells_apply(array(SELECT ROW(status, loc, type, category, urgency, 1)::directaid_cell_delta FROM new_rows
			UNION ALL SELECT ROW(status, loc, type, category, urgency, -1)::directaid_cell_delta FROM old_rows));
	END IF;
	RETURN NULL;
END $$;

-- The backfill sees every committed record: writes wait for this migration's commit.
LOCK TABLE directaid_records IN SHARE MODE;

SELECT directaid_cells_apply(array(SELECT ROW(status, loc, type, category, urgency, 1)::directaid_cell_delta FROM directaid_records));

CREATE TRIGGER directaid_cells_insert AFTER INSERT ON directaid_records REFERENCING NEW TABLE AS new_rows
	FOR EACH STATEMENT EXECUTE FUNCTION directaid_cells_add();
CREATE TRIGGER directaid_cells_update AFTER UPDATE ON directaid_records REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
	FOR EACH STATEMENT EXECUTE FUNCTION directaid_cells_add();
CREATE TRIGGER directaid_cells_delete AFTER DELETE ON directaid_records REFERENCING OLD TABLE AS old_rows
	FOR EACH STATEMENT EXECUTE FUNCTION directaid_cells_add();
