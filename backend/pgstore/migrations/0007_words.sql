-- Counters of q's tokens (store.TextTokens: the maximal runs of letters and digits of the folded title and
-- description), per status and shard, as the Badger store keeps them: a one-word q that no other token
-- contains has the token's counter as its exact total. Written by the store in the transaction of each
-- write (the tokens are cut in Go, where q folds its words); migrate.go backfills them after this file.
CREATE TABLE directaid_words (
	status text NOT NULL,
	token  text COLLATE "C" NOT NULL,
	shard  smallint NOT NULL,
	n      bigint NOT NULL,
	PRIMARY KEY (status, token, shard)
);
-- The tokens that contain a query word (LIKE '%word%').
CREATE INDEX directaid_words_token ON directaid_words USING gin (token gin_trgm_ops);

LOCK TABLE directaid_records IN SHARE MODE;
