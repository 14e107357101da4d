package pgstore

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/directaid/directaid/backend/store"
	"github.com/directaid/directaid/backend/store/recordjson"
)

// personal is the text that store.Record.ErasePersonal clears, kept in directaid_personal (migration
// 0010) so that erasing it rewrites that small table only (see maintain.go).
type personal struct {
	Name     string `json:"n,omitempty"`
	Whatsapp string `json:"w,omitempty"`
	E164     string `json:"e,omitempty"`
	Address  string `json:"a,omitempty"`
}

// set takes a member of a personal doc for recordjson.Strings; whatever it refuses, encoding/json reads
// (TestPersonalMatchesEncodingJSON, FuzzPersonal).
func (p *personal) set(key, val string) bool {
	switch key {
	case "n":
		p.Name = val
	case "w":
		p.Whatsapp = val
	case "e":
		p.E164 = val
	case "a":
		p.Address = val
	default:
		return false
	}
	return true
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
	if !recordjson.Strings(doc, p.set) {
		p = personal{}
		if err := json.Unmarshal(doc, &p); err != nil {
			return fmt.Errorf("pgstore: personal fields of %s do not decode: %w", rec.ID, err)
		}
	}
	rec.ContactName, rec.ContactWhatsapp, rec.ContactE164, rec.Address = p.Name, p.Whatsapp, p.E164, p.Address
	return nil
}

// recordCols are the columns decode reads from directaid_records (unaliased): doc, updated_ms and the
// record's personal doc, through the parent: for statements of many records on rare paths (a conflict, an
// import); one record's use recordColsOf.
const recordCols = `doc, updated_ms, (SELECT p.doc FROM directaid_personal p WHERE p.id = directaid_records.id)`

// recordColsOf are recordCols of the one record id, read from its partition.
func recordColsOf(id string) string {
	return `doc, updated_ms, (SELECT p.doc FROM ` + personalTable(id) + ` p WHERE p.id = directaid_records.id)`
}

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
			pub, err := recordjson.Encode(rec)
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

// A statement on the partitioned parent locks and opens all 64 partitions and their indexes on every
// call on PostgreSQL 15: a cached plan is locked whole before run-time pruning, and a correlated
// subquery (recordCols) is pruned only at run time. One record's statements name its partition instead,
// computed here as PostgreSQL routes it (a get: 64 µs → 4 µs of execution, 0.8 → 0.02 ms a round trip
// warm at 50k; see the README's "On PostgreSQL").

// routingProbe are ids whose partitions checkPersonalRouting asks PostgreSQL about: NewID's shape, the
// shortest, and characters outside the alphabet of 1 to 4 bytes in either of the last two places.
var routingProbe = []string{"01k2x3y4z5a6b7c8", "06h1f2zn4q9jhrfz", "", "a", "zz", "06h1f2zn4q9jhrfk-ñ€", "x€z", "ñ1", "ab𝄞"}

// checkPersonalRouting refuses to serve when PostgreSQL does not route ids to the partitions part computes
// (a migration's SQL and this node's Go disagreeing): one record's reads name its partition, and a wrong
// one would answer without the personal data rather than fail.
func checkPersonalRouting(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, part func(string) int) error {
	var got []int32
	if err := q.QueryRow(ctx, `SELECT array_agg(directaid_personal_part(id) ORDER BY i) FROM unnest($1::text[]) WITH ORDINALITY AS x(id, i)`,
		routingProbe).Scan(&got); err != nil {
		return fmt.Errorf("pgstore: checking the partitions of directaid_personal: %w", err)
	}
	for i, id := range routingProbe {
		if int(got[i]) != part(id) {
			return fmt.Errorf("pgstore: PostgreSQL routes %q to another partition of directaid_personal (%d) than this node computes (%d): refusing to serve", id, got[i], part(id))
		}
	}
	return nil
}

// personalTable is the partition of directaid_personal that holds record id's row.
func personalTable(id string) string { return personalPartition(personalPart(id)) }

// personalPartition is the name of partition k of directaid_personal (migration 0020).
func personalPartition(k int) string { return "directaid_personal_g" + strconv.Itoa(k) }

// personalPart is the partition of id's personal row: the place group the id tells (migration 0020).
func personalPart(id string) int { return store.IDGroup(id) }
