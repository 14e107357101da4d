package pgstore_test

import (
	"bytes"
	"context"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/directaid/directaid/backend/pgstore"
	"github.com/directaid/directaid/backend/store"
	"github.com/directaid/directaid/backend/store/storetest"
	"github.com/directaid/directaid/internal/pgtest"
)

// TestMigratePersonalNear: a database whose personal rows are in 0010's hash partitions, as every
// database before migration 0020, answers the same after it; the hashed partitions are gone with their
// files; a radius page of records published near each other reads one partition.
func TestMigratePersonalNear(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.Shared(t).NewDatabase(t)
	db, s := openStore(t, dsn)
	recs := storetest.Seed(t, s, 300, time.Now().Add(-time.Hour), time.Second)
	// And 30 published within 300 m of the page's centre.
	rng := rand.New(rand.NewPCG(5, 6))
	var near []*store.Record
	for i := range 30 {
		at := time.Now().Add(-time.Minute)
		r := storetest.SynthRecord(rng, at, 1000+i)
		lat, lon := 4.53+rng.Float64()*0.005, -75.68+rng.Float64()*0.005
		r.Latitude, r.Longitude = &lat, &lon
		r.ID = store.NewIDNear(at, &lat, &lon)
		near = append(near, r)
	}
	recs = append(recs, storetest.CreateAll(t, s, near)...)
	spec := store.ListSpec{Near: true, Lat: 4.53, Lon: -75.68, RadiusKm: 5, Limit: 20}
	before, err := s.List(ctx, &spec)
	if err != nil || len(before.Records) < 10 {
		t.Fatalf("%v, %d records", err, len(before.Records))
	}
	// Back to 0010's table: a hash of the id, partitions _0 … _63.
	var files []string
	if err := db.Pool.QueryRow(ctx, `SELECT array_agg(pg_relation_filepath(oid)) FROM pg_class WHERE relname LIKE 'directaid_personal_%' AND relkind = 'r'`).Scan(&files); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Pool.Exec(ctx, `ALTER TABLE directaid_personal RENAME TO x;
		CREATE TABLE directaid_personal (id text COLLATE "C" PRIMARY KEY, doc bytea NOT NULL) PARTITION BY HASH (id);
		DO $$ BEGIN FOR i IN 0..63 LOOP
			EXECUTE format('CREATE TABLE directaid_personal_%s PARTITION OF directaid_personal FOR VALUES WITH (MODULUS 64, REMAINDER %s)', i, i);
		END LOOP; END $$;
		INSERT INTO directaid_personal SELECT * FROM x; DROP TABLE x; DROP FUNCTION directaid_personal_part(text);
		DELETE FROM directaid_schema_migrations WHERE version = 20`); err != nil {
		t.Fatal(err)
	}
	var hashed []string
	if err := db.Pool.QueryRow(ctx, `SELECT array_agg(pg_relation_filepath(oid)) FROM pg_class WHERE relname ~ '^directaid_personal_[0-9]+$'`).Scan(&hashed); err != nil || len(hashed) != 64 {
		t.Fatalf("%d hashed partitions: %v", len(hashed), err)
	}
	if applied, err := pgstore.Migrate(ctx, db.Pool); err != nil || !slices.Equal(applied, []int{20}) {
		t.Fatalf("migrate: %v, %v", applied, err)
	}
	var left int
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM pg_class WHERE relname ~ '^directaid_personal_([0-9]+|hashed)'`).Scan(&left); err != nil || left != 0 {
		t.Fatalf("%d relations of the hashed table left (%v)", left, err)
	}
	var dataDir string
	if _, err := db.Pool.Exec(ctx, `CHECKPOINT`); err != nil { // a dropped table's file goes at the next checkpoint
		t.Fatal(err)
	}
	if err := db.Pool.QueryRow(ctx, `SHOW data_directory`).Scan(&dataDir); err != nil {
		t.Fatal(err)
	}
	for _, f := range append(files, hashed...) {
		if _, err := os.Stat(filepath.Join(dataDir, f)); err == nil {
			t.Errorf("%s is still on disk", f)
		}
	}
	readsBack(t, s, recs, "after 0020")
	after, err := s.List(ctx, &spec)
	if err != nil {
		t.Fatal(err)
	}
	sameJSON(t, "a radius page after 0020", after, before)
	parts := map[int]bool{}
	for _, r := range after.Records {
		parts[store.IDGroup(r.ID)] = true
	}
	if len(parts) > 2 {
		t.Errorf("a radius page of %d records published within 300 m spans %d groups, want 1 or 2", len(after.Records), len(parts))
	}
}

// readsBack fails t unless every record of recs reads back from s as it is (after a migration, what).
func readsBack(t *testing.T, s *pgstore.Store, recs []*store.Record, what string) {
	t.Helper()
	for _, r := range recs {
		got, err := s.Get(context.Background(), r.ID)
		if err != nil {
			t.Fatal(err)
		}
		sameJSON(t, what, got, r)
	}
}

// sameJSON fails t unless got and want encode alike.
func sameJSON(t *testing.T, what string, got, want any) {
	t.Helper()
	a, errA := json.Marshal(got)
	b, errB := json.Marshal(want)
	if errA != nil || errB != nil || !bytes.Equal(a, b) {
		t.Fatalf("%s:\n got %s\nwant %s (%v, %v)", what, a, b, errA, errB)
	}
}
