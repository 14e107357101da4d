-- directaid_personal (0010) partitioned by the place group its id tells (store.IDGroup: the last 6 bits of
-- an id; ids made by store.NewIDNear carry the group of the record's 5 km cell there) instead of a hash of
-- the whole id: the records of a radius page, published near each other, have their personal rows in one
-- or two partitions, read with one statement each, where a hash spread a page of 20 over ~17 of the 64
-- (17 statements: a third of PostgreSQL's work of a 5 km list at 1M records). Records published before
-- keep their random last bits, spread as before. Still 64 partitions, so an erasure's rewrite (maintain.go)
-- copies about 1/64 of the table, as before.
--
-- The partitions are named directaid_personal_g0 … _g63, not _0 … _63: a node of an older version, which
-- computes the hash, names partitions that are no longer there and fails, instead of reading another
-- partition and answering without the personal data. The rows are copied (the table is locked meanwhile:
-- at 1M records, ~170 MB) and the hashed table dropped with its files, dead versions of erased rows
-- included.

-- The group of an id, as store.IDGroup computes it (by characters; one outside the alphabet counts 0).
CREATE FUNCTION directaid_personal_part(id text) RETURNS int LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
	SELECT greatest(strpos('0123456789abcdefghjkmnpqrstvwxyz', right(id, 1)) - 1, 0)
		+ 32 * (greatest(strpos('0123456789abcdefghjkmnpqrstvwxyz', substr(id, length(id) - 1, 1)) - 1, 0) % 2)
$$;

ALTER TABLE directaid_personal RENAME TO directaid_personal_hashed;

CREATE TABLE directaid_personal (
	id  text COLLATE "C" NOT NULL,
	doc bytea NOT NULL
) PARTITION BY LIST (directaid_personal_part(id));

DO $$
BEGIN
	FOR i IN 0..63 LOOP
		EXECUTE format('CREATE TABLE directaid_personal_g%s PARTITION OF directaid_personal FOR VALUES IN (%s)', i, i);
	END LOOP;
END $$;

-- No statistics of doc: ANALYZE keeps sample values of a column (most common values, histogram bounds) in
-- pg_statistic, which an erasure's rewrite does not touch; the personal text must be in no other file.
-- Recurses to the partitions.
ALTER TABLE directaid_personal ALTER COLUMN doc SET STATISTICS 0;

INSERT INTO directaid_personal (id, doc) SELECT id, doc FROM directaid_personal_hashed;

DROP TABLE directaid_personal_hashed;

-- The key of each partition, built after the copy. A partitioned table cannot have one on an expression's
-- column; a group is a function of the id, so an id is in one partition and unique in the table.
DO $$
BEGIN
	FOR i IN 0..63 LOOP
		EXECUTE format('ALTER TABLE directaid_personal_g%s ADD PRIMARY KEY (id)', i);
	END LOOP;
END $$;

ANALYZE directaid_personal;
