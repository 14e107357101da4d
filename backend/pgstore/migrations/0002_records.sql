-- The records. doc is the whole record as JSON (the store's own encoding, as Badger keeps it); the other
-- columns are what lists filter, order and count on. The pair (source, external_id) is bytea: any bytes a
-- client sends, NUL included, compared exactly.
CREATE EXTENSION IF NOT EXISTS pg_trgm;

CREATE TABLE directaid_records (
	id             text COLLATE "C" PRIMARY KEY, -- sorts by creation time
	source         bytea NOT NULL,
	external_id    bytea NOT NULL,
	created_at     timestamptz NOT NULL,
	emergency_slug text NOT NULL,
	type           text NOT NULL,
	category       text NOT NULL,
	urgency        text NOT NULL,               -- '' for offers
	needed_people  integer,
	loc            point,                       -- (longitude, latitude) in degrees
	search_text    text NOT NULL,               -- store.SearchText: folded in Go, as Badger folds it
	doc            bytea NOT NULL,
	CONSTRAINT directaid_records_pair UNIQUE (source, external_id)
);

CREATE INDEX directaid_records_slug ON directaid_records (emergency_slug, id);
CREATE INDEX directaid_records_loc ON directaid_records USING gist (loc);
-- Substring search (every word of q must occur) with trigrams: LIKE '%word%' uses it.
CREATE INDEX directaid_records_text ON directaid_records USING gin (search_text gin_trgm_ops);
