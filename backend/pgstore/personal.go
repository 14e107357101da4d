package pgstore

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/bits"
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

// A statement on the partitioned parent locks and opens all 64 partitions and their indexes on every
// call on PostgreSQL 15: a cached plan is locked whole before run-time pruning, and a correlated
// subquery (recordCols) is pruned only at run time. One record's statements name its partition instead,
// computed here as PostgreSQL routes it (a get: 64 µs → 4 µs of execution, 0.8 → 0.02 ms a round trip
// warm at 50k; see the README's "On PostgreSQL").

// routingProbe are ids whose partitions checkPersonalRouting asks PostgreSQL about: lengths across the
// hash's 12-byte blocks and its tail.
var routingProbe = []string{"01k2x3y4z5a6b7c8", "a", "06h1f2zn4q9jhrfk-ñ€"}

// checkPersonalRouting refuses to serve when PostgreSQL does not route ids to the partitions part computes
// (personalPart follows hash_bytes_extended on a little-endian server): one record's reads name its
// partition, and a wrong one would answer without the personal data rather than fail.
func checkPersonalRouting(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, part func(string) int) error {
	for _, id := range routingProbe {
		var ok bool
		if err := q.QueryRow(ctx, `SELECT satisfies_hash_partition('directaid_personal'::regclass, $1, $2, $3::text COLLATE "C")`,
			personalParts, part(id), id).Scan(&ok); err != nil {
			return fmt.Errorf("pgstore: checking the partitions of directaid_personal: %w", err)
		}
		if !ok {
			return fmt.Errorf("pgstore: PostgreSQL routes %q to another partition of directaid_personal than this node computes (a big-endian server?): refusing to serve", id)
		}
	}
	return nil
}

// personalTable is the partition of directaid_personal that holds record id's row.
func personalTable(id string) string { return personalPartition(personalPart(id)) }

// personalPartition is the name of partition k of directaid_personal (migration 0010).
func personalPartition(k int) string { return "directaid_personal_" + strconv.Itoa(k) }

// personalPart is the remainder of id's hash partition, as PostgreSQL computes it for one text key of
// collation C: hash_combine64(0, hashtextextended(id, HASH_PARTITION_SEED)) modulo personalParts.
func personalPart(id string) int {
	const seed, combine = 0x7A5B22367996DCFD, 0x49a0f4dd15e5a8e3
	return int((hashBytesExtended([]byte(id), seed) + combine) % personalParts)
}

// hashBytesExtended is PostgreSQL's hash_bytes_extended (src/common/hashfn.c, Bob Jenkins' lookup3
// with a 64-bit seed) on a little-endian machine.
func hashBytesExtended(k []byte, seed uint64) uint64 {
	rot := bits.RotateLeft32
	mix := func(a, b, c uint32) (uint32, uint32, uint32) {
		a -= c
		a ^= rot(c, 4)
		c += b
		b -= a
		b ^= rot(a, 6)
		a += c
		c -= b
		c ^= rot(b, 8)
		b += a
		a -= c
		a ^= rot(c, 16)
		c += b
		b -= a
		b ^= rot(a, 19)
		a += c
		c -= b
		c ^= rot(b, 4)
		b += a
		return a, b, c
	}
	a := 0x9e3779b9 + uint32(len(k)) + 3923095
	b, c := a, a
	if seed != 0 {
		a += uint32(seed >> 32)
		b += uint32(seed)
		a, b, c = mix(a, b, c)
	}
	for ; len(k) >= 12; k = k[12:] {
		a += binary.LittleEndian.Uint32(k)
		b += binary.LittleEndian.Uint32(k[4:])
		c += binary.LittleEndian.Uint32(k[8:])
		a, b, c = mix(a, b, c)
	}
	// The last 11 bytes; the lowest byte of c is the length's.
	for i := len(k) - 1; i >= 0; i-- {
		switch v := uint32(k[i]); {
		case i >= 8:
			c += v << (8 * (i - 7))
		case i >= 4:
			b += v << (8 * (i - 4))
		default:
			a += v << (8 * i)
		}
	}
	c ^= b
	c -= rot(b, 14)
	a ^= c
	a -= rot(c, 11)
	b ^= a
	b -= rot(a, 25)
	c ^= b
	c -= rot(b, 16)
	a ^= c
	a -= rot(c, 4)
	b ^= a
	b -= rot(a, 14)
	c ^= b
	c -= rot(b, 24)
	return uint64(b)<<32 | uint64(c)
}
