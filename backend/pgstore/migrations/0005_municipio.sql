-- The DIVIPOLA municipio of a record (store.Record.MunicipioCode, '' when it has none), for the municipio
-- filter of lists. Records stored before it have none in their doc either, so no backfill is needed.
ALTER TABLE directaid_records ADD COLUMN municipio_code text COLLATE "C" NOT NULL DEFAULT '';
CREATE INDEX directaid_records_municipio ON directaid_records (municipio_code, id) WHERE municipio_code <> '';
