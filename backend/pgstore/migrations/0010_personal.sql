-- The personal text of a record (contact name, phone as given and as E.164, address), in a table of its
-- own, keyed by the record's id; directaid_records' doc no longer holds it. An erasure deletes the row
-- here, and the maintenance cycle rewrites (VACUUM FULL) this small table, not the records table, to
-- drop the old bytes from disk (maintain.go). doc is JSON of pgstore's personal (short keys); a record with
-- none of these fields has no row. The exact place stays in the records table: its GiST index needs it.
-- personal.go moves the fields of the records stored before this file out of their docs; Migrate then
-- rewrites the records table once, since the old versions of those docs still hold them.
--
-- It is split by a hash of the id into 64 partitions (directaid_personal_0 … _63), so that a rewrite
-- copies only the partitions that held an erased record, about 1/64 of the table each: the lock that
-- readers wait for lasts that long.
CREATE TABLE directaid_personal (
	id  text COLLATE "C" PRIMARY KEY,
	doc bytea NOT NULL
) PARTITION BY HASH (id);

DO $$
BEGIN
	FOR i IN 0..63 LOOP
		EXECUTE format('CREATE TABLE directaid_personal_%s PARTITION OF directaid_personal FOR VALUES WITH (MODULUS 64, REMAINDER %s)', i, i);
	END LOOP;
END $$;

LOCK TABLE directaid_records IN SHARE MODE;
