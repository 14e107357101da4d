-- The counters' shard is the connection's own (directaid.shard, set by the pool on connecting: no two
-- connections of a node share one), not pg_backend_pid() % 16, where connections collided and waited for
-- each other's commits on hot rows (a word in every text, a common kind). Other clients fall back to the
-- backend's pid. Rows already written keep their shard: readers sum every shard.
CREATE FUNCTION directaid_shard() RETURNS smallint LANGUAGE sql STABLE AS $$
	SELECT coalesce(nullif(current_setting('directaid.shard', true), '')::smallint, (pg_backend_pid() % 64)::smallint)
$$;

CREATE OR REPLACE FUNCTION directaid_count_add(r directaid_records, d integer) RETURNS void LANGUAGE sql AS $$
	INSERT INTO directaid_counts AS c (emergency_slug, status, type, category, urgency, shard, n, people, newest)
	VALUES (r.emergency_slug, r.status, r.type, r.category, r.urgency, directaid_shard(), d,
		CASE WHEN r.type = 'request' AND r.needed_people > 0 THEN d * r.needed_people ELSE 0 END,
		CASE WHEN d > 0 THEN r.created_at END)
	ON CONFLICT (emergency_slug, status, type, category, urgency, shard) DO UPDATE
	SET n = c.n + EXCLUDED.n, people = c.people + EXCLUDED.people, newest = greatest(c.newest, EXCLUDED.newest)
$$;
