-- Community reports (one row per record and reporter: a reporter counts once), the append-only audit
-- trail of moderation and publisher actions (no personal data), and the server's secrets.
CREATE TABLE directaid_reports (
	record_id text COLLATE "C" NOT NULL REFERENCES directaid_records (id),
	reporter  text NOT NULL,                   -- keyed hash of the reporter's address, never the address
	reason    text NOT NULL,
	note      text NOT NULL DEFAULT '',
	at        timestamptz NOT NULL,
	reviewed  boolean NOT NULL DEFAULT false,
	PRIMARY KEY (record_id, reporter)
);
CREATE INDEX directaid_reports_unreviewed ON directaid_reports (record_id) WHERE NOT reviewed;

CREATE TABLE directaid_audit (
	seq bigserial PRIMARY KEY,
	doc jsonb NOT NULL
);

CREATE TABLE directaid_secrets (
	name  text PRIMARY KEY,
	value bytea NOT NULL
);
