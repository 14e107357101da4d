-- What readiness commits (Store.Probe): one row, overwritten by every probe of every node, so that "ready"
-- means a write reached the server and was committed (synchronous_commit on), as a publication's is.
CREATE TABLE directaid_probe (
	one boolean PRIMARY KEY DEFAULT true CHECK (one),
	at  timestamptz NOT NULL
);
