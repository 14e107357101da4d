-- A disowning holds against the network that published the reported record (store.Disowning's
-- Publisher): whoever published someone else's number cannot publish it again with it shown, and
-- nobody can block a number for its owner by publishing it and reporting it. '' (rows from before)
-- holds against every publisher.
ALTER TABLE directaid_disowned ADD COLUMN publisher text NOT NULL DEFAULT '';
