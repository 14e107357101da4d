-- The webhooks' outbox (package backend/webhooks): one row per event and webhook. id is the event's own
-- (the same event derived by two nodes is one row); seq orders a webhook's events of one record; a node
-- claims a row by setting lease_owner and lease_until under FOR UPDATE SKIP LOCKED, so that one node
-- delivers it. body holds no personal text (ids, statuses, links, counts).
CREATE TABLE directaid_webhook_events (
	id          text COLLATE "C" PRIMARY KEY,
	seq         bigserial NOT NULL,
	hook        text COLLATE "C" NOT NULL,
	record_id   text COLLATE "C" NOT NULL,
	type        text NOT NULL,
	created_at  timestamptz NOT NULL,
	due_at      timestamptz NOT NULL,
	next_at     timestamptz NOT NULL,
	body        bytea NOT NULL,
	state       text NOT NULL,
	attempts    integer NOT NULL DEFAULT 0,
	last_status integer NOT NULL DEFAULT 0,
	last_error  text NOT NULL DEFAULT '',
	updated_at  timestamptz NOT NULL,
	lease_owner text NOT NULL DEFAULT '',
	lease_until timestamptz
);

-- The claims read the pending rows due now (not the expiring events waiting for a later day), and each
-- (hook, record)'s in seq order.
CREATE INDEX directaid_webhook_events_due ON directaid_webhook_events (due_at) WHERE state = 'pending';
CREATE INDEX directaid_webhook_events_pending ON directaid_webhook_events (hook, record_id, seq) WHERE state = 'pending';
-- The delivery log, newest first, and the prune of the events done with.
CREATE INDEX directaid_webhook_events_updated ON directaid_webhook_events (updated_at DESC);

-- What the webhooks remember between polls and across restarts: the change feed's position, the last
-- status seen of each record published under a webhook's sources.
CREATE TABLE directaid_webhook_state (
	key   text COLLATE "C" PRIMARY KEY,
	value text NOT NULL
);
