-- The nodes' Caddy instance ids, each with a nonce of the process that last wrote it (Store.ClaimInstance):
-- two live processes with one id (a copied instance.uuid) overwrite each other's nonce, and both see it.
CREATE TABLE directaid_nodes (
	instance_id text PRIMARY KEY,
	nonce text NOT NULL,
	seen_at timestamptz NOT NULL
);
