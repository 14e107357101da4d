-- The responses to records ("yo puedo ayudar"): doc is the whole response as JSON (message, the
-- responder's name and phone: personal text, shown only to the record's publisher); status and expires_at
-- are what the public count filters on. A record's erasure deletes its rows, and the maintenance rewrite
-- (VACUUM FULL) leaves no dead version of them in the table's files.
CREATE TABLE directaid_responses (
	record_id  text COLLATE "C" NOT NULL,
	id         text COLLATE "C" NOT NULL,
	created_at timestamptz NOT NULL,
	status     text NOT NULL,
	expires_at timestamptz NOT NULL,
	doc        bytea NOT NULL,
	PRIMARY KEY (record_id, id)
);

-- No statistics of doc: ANALYZE would keep sample values (personal text) in pg_statistic.
ALTER TABLE directaid_responses ALTER COLUMN doc SET STATISTICS 0;
