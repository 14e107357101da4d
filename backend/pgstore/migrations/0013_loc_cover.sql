-- directaid:no-transaction (each statement alone: the builds do not block writes; see migrate.go)
-- The radius walk (KNN, pgstore listNear) reads a record's status and id with its point: with them in the
-- GiST index, an index-only scan, where each of the ~84 candidates of a page cost a random heap page (at
-- 1M records, 78 of 90 buffers read and 21 ms of 22 in EXPLAIN ANALYZE; 0.4–1.8 ms with this index, no
-- heap fetch). It serves every `loc <@ box` of the old index, which goes.
CREATE INDEX CONCURRENTLY IF NOT EXISTS directaid_records_loc_cover ON directaid_records USING gist (loc) INCLUDE (status, id);
DROP INDEX CONCURRENTLY IF EXISTS directaid_records_loc;
