-- Whether a response adds to its record's public count (store.Response.Uncounted, negated): a response
-- past its responder's network's share reaches the publisher and is left out of the count.
ALTER TABLE directaid_responses ADD COLUMN counted boolean NOT NULL DEFAULT true;
