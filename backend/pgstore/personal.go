package pgstore

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/directaid/directaid/backend/store"
)

// personal is the text that store.Record.ErasePersonal clears, kept in directaid_personal (migration
// 0010) so that erasing it rewrites that small table only (see maintain.go).
type personal struct {
	Name     string `json:"n,omitempty"`
	Whatsapp string `json:"w,omitempty"`
	E164     string `json:"e,omitempty"`
	Address  string `json:"a,omitempty"`
}

// takePersonal moves rec's personal text out of rec, and returns it as stored in directaid_personal: nil
// when there is none (no row).
func takePersonal(rec *store.Record) ([]byte, error) {
	p := personal{rec.ContactName, rec.ContactWhatsapp, rec.ContactE164, rec.Address}
	rec.ContactName, rec.ContactWhatsapp, rec.ContactE164, rec.Address = "", "", "", ""
	if p == (personal{}) {
		return nil, nil
	}
	return json.Marshal(&p)
}

// putPersonal sets the personal text doc (a directaid_personal doc, nil for none) in rec.
func putPersonal(rec *store.Record, doc []byte) error {
	if doc == nil {
		return nil
	}
	var p personal
	if err := json.Unmarshal(doc, &p); err != nil {
		return fmt.Errorf("pgstore: personal fields of %s do not decode: %w", rec.ID, err)
	}
	rec.ContactName, rec.ContactWhatsapp, rec.ContactE164, rec.Address = p.Name, p.Whatsapp, p.E164, p.Address
	return nil
}

// recordCols are the columns decode reads from directaid_records (unaliased): doc, updated_ms and the
// record's personal doc.
const recordCols = `doc, updated_ms, (SELECT p.doc FROM directaid_personal p WHERE p.id = directaid_records.id)`

// movePersonal (after migration 0010) takes the personal text out of the docs stored before it, in
// batches by id, in the migration's transaction.
func movePersonal(ctx context.Context, tx pgx.Tx) error {
	after := ""
	for {
		rows, err := tx.Query(ctx, `SELECT id, doc, updated_ms FROM directaid_records WHERE id > $1 ORDER BY id LIMIT 2000`, after)
		if err != nil {
			return err
		}
		var ids []string
		var docs, pdocs [][]byte
		var id string
		read := 0
		var doc []byte
		var ms int64
		if _, err := pgx.ForEachRow(rows, []any{&id, &doc, &ms}, func() error {
			read++
			rec, err := decode(doc, ms, nil)
			if err != nil {
				return err
			}
			pdoc, err := takePersonal(rec)
			if err != nil || pdoc == nil {
				return err
			}
			rec.UpdatedAt = time.Time{} // as stored: updated_ms is the authority
			pub, err := json.Marshal(rec)
			ids, docs, pdocs = append(ids, id), append(docs, pub), append(pdocs, pdoc)
			return err
		}); err != nil {
			return err
		}
		if read == 0 {
			return nil
		}
		after = id
		if len(ids) == 0 {
			continue
		}
		if _, err := tx.Exec(ctx, `UPDATE directaid_records r SET doc = d.doc FROM unnest($1::text[], $2::bytea[]) AS d(id, doc) WHERE r.id = d.id`,
			ids, docs); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO directaid_personal (id, doc) SELECT * FROM unnest($1::text[], $2::bytea[])`, ids, pdocs); err != nil {
			return err
		}
	}
}
