-- Caddy's storage (certificates, OCSP staples, ACME accounts, caddy-ratelimit's distributed state), shared by
-- every node: keys are slash-separated paths, compared byte by byte (COLLATE "C") so that a prefix is a range.
CREATE TABLE directaid_certmagic_data (
	key      text COLLATE "C" PRIMARY KEY,
	value    bytea NOT NULL,
	modified timestamptz NOT NULL DEFAULT now()
);

-- Named locks with a lease: the holder renews "expires" while it works; a lock whose holder died is free
-- once it has expired. "token" is the holder's secret, so a holder whose lease lapsed cannot renew or
-- release a lock that another node has taken since.
CREATE TABLE directaid_certmagic_locks (
	name    text COLLATE "C" PRIMARY KEY,
	token   text NOT NULL,
	expires timestamptz NOT NULL
);
