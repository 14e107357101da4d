-- A record's life (issue 13): its status, the instant of its last change (Unix ms, what the change feed
-- orders and pages by) and, while open, when it expires. doc holds the same status; updated_ms is the
-- authority for updatedAt (a writer learns its stamp in the statement that stores it).
ALTER TABLE directaid_records
	ADD COLUMN status     text NOT NULL DEFAULT 'open',
	ADD COLUMN updated_ms bigint,
	ADD COLUMN expires_at timestamptz;
UPDATE directaid_records SET updated_ms = (extract(epoch FROM created_at) * 1000)::bigint;
ALTER TABLE directaid_records ALTER COLUMN updated_ms SET NOT NULL;

-- Lists show one status (open by default), newest first.
DROP INDEX directaid_records_slug;
CREATE INDEX directaid_records_status ON directaid_records (status, id);
CREATE INDEX directaid_records_status_slug ON directaid_records (status, emergency_slug, id);
-- The change feed: oldest change first, of every emergency or of one.
CREATE INDEX directaid_records_changes ON directaid_records (updated_ms, id);
CREATE INDEX directaid_records_slug_changes ON directaid_records (emergency_slug, updated_ms, id);
-- Open records by expiry, for the sweep that marks them expired.
CREATE INDEX directaid_records_expiry ON directaid_records (expires_at) WHERE status = 'open' AND expires_at IS NOT NULL;
