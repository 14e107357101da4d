-- Phone numbers their owners said are not theirs to publish (a not_my_number report that hid one): the
-- key is a keyed hash of the number, never the number. While a row stands, a new publication with the
-- number does not show it (store.Disowning). Few rows: each is a phone a report hid, within the reports'
-- bounds.
CREATE TABLE directaid_disowned (
	key       text NOT NULL,
	record_id text COLLATE "C" NOT NULL,
	reporter  text NOT NULL,
	at        timestamptz NOT NULL,
	PRIMARY KEY (key, record_id)
);
CREATE INDEX directaid_disowned_record ON directaid_disowned (record_id);
