-- Counters of the records, kept by a trigger in the transaction of every write (insert, update of
-- status or category, migrate's import), so that list totals and the panorama read a few counter rows
-- instead of counting records. One row per (emergency, status, type, category, urgency) and shard: a
-- writer adds to the shard of its connection (pg_backend_pid() % 16), so 64 publishers of one kind do not
-- all queue behind one row lock until their commits; readers sum the shards.
CREATE TABLE directaid_counts (
	emergency_slug text NOT NULL,
	status         text NOT NULL,
	type           text NOT NULL,
	category       text NOT NULL,
	urgency        text NOT NULL,
	shard          smallint NOT NULL,
	n              bigint NOT NULL,
	people         bigint NOT NULL,              -- neededPeople of the requests (> 0) counted here
	newest         timestamptz,                  -- the newest created_at ever counted here
	PRIMARY KEY (emergency_slug, status, type, category, urgency, shard)
);

CREATE FUNCTION directaid_count_add(r directaid_records, d integer) RETURNS void LANGUAGE sql AS $$
	INSERT INTO directaid_counts AS c (emergency_slug, status, type, category, urgency, shard, n, people, newest)
	VALUES (r.emergency_slug, r.status, r.type, r.category, r.urgency, pg_backend_pid() % 16, d,
		CASE WHEN r.type = 'request' AND r.needed_people > 0 THEN d * r.needed_people ELSE 0 END,
		CASE WHEN d > 0 THEN r.created_at END)
	ON CONFLICT (emergency_slug, status, type, category, urgency, shard) DO UPDATE
	SET n = c.n + EXCLUDED.n, people = c.people + EXCLUDED.people, newest = greatest(c.newest, EXCLUDED.newest)
$$;

CREATE FUNCTION directaid_records_count() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF TG_OP = 'INSERT' THEN
		PERFORM directaid_count_add(NEW, 1);
	ELSIF TG_OP = 'DELETE' THEN
		PERFORM directaid_count_add(OLD, -1);
	ELSIF (OLD.emergency_slug, OLD.status, OLD.type, OLD.category, OLD.urgency, OLD.needed_people)
		IS DISTINCT FROM (NEW.emergency_slug, NEW.status, NEW.type, NEW.category, NEW.urgency, NEW.needed_people) THEN
		-- Rows in key order, so that two updates never wait for each other's counter rows crosswise.
		IF (OLD.emergency_slug, OLD.status, OLD.type, OLD.category, OLD.urgency)
			<= (NEW.emergency_slug, NEW.status, NEW.type, NEW.category, NEW.urgency) THEN
			PERFORM directaid_count_add(OLD, -1);
			PERFORM directaid_count_add(NEW, 1);
		ELSE
			PERFORM directaid_count_add(NEW, 1);
			PERFORM directaid_count_add(OLD, -1);
		END IF;
	END IF;
	RETURN NULL;
END $$;

-- The backfill sees every committed record: writes wait for this migration's commit.
LOCK TABLE directaid_records IN SHARE MODE;

INSERT INTO directaid_counts (emergency_slug, status, type, category, urgency, shard, n, people, newest)
SELECT emergency_slug, status, type, category, urgency, 0, count(*),
	coalesce(sum(needed_people) FILTER (WHERE type = 'request' AND needed_people > 0), 0), max(created_at)
FROM directaid_records GROUP BY 1, 2, 3, 4, 5;

CREATE TRIGGER directaid_records_count AFTER INSERT OR UPDATE OR DELETE ON directaid_records
	FOR EACH ROW EXECUTE FUNCTION directaid_records_count();
