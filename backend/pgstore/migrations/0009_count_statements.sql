-- Inserts are counted once per statement instead of once per row: a publication batch (create.go) is one
-- multi-row INSERT, and 64 rows of one kind become one counter upsert instead of 64 updates of one row
-- (each a row lock, a new row version and WAL). Updates and deletes keep 0006's row trigger; its INSERT
-- branch is no longer reached. Rows in key order, as the row trigger takes them.
CREATE FUNCTION directaid_records_count_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO directaid_counts AS c (emergency_slug, status, type, category, urgency, shard, n, people, newest)
	SELECT emergency_slug, status, type, category, urgency, directaid_shard(), count(*),
		coalesce(sum(needed_people) FILTER (WHERE type = 'request' AND needed_people > 0), 0), max(created_at)
	FROM inserted GROUP BY 1, 2, 3, 4, 5 ORDER BY 1, 2, 3, 4, 5
	ON CONFLICT (emergency_slug, status, type, category, urgency, shard) DO UPDATE
	SET n = c.n + EXCLUDED.n, people = c.people + EXCLUDED.people, newest = greatest(c.newest, EXCLUDED.newest);
	RETURN NULL;
END $$;

DROP TRIGGER directaid_records_count ON directaid_records;
CREATE TRIGGER directaid_records_count AFTER UPDATE OR DELETE ON directaid_records
	FOR EACH ROW EXECUTE FUNCTION directaid_records_count();
CREATE TRIGGER directaid_records_count_insert AFTER INSERT ON directaid_records
	REFERENCING NEW TABLE AS inserted FOR EACH STATEMENT EXECUTE FUNCTION directaid_records_count_inserted();
