package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/directaid/directaid/backend/badgerstore"
	"github.com/directaid/directaid/backend/pgstore"
	"github.com/directaid/directaid/backend/store"
	"github.com/directaid/directaid/backend/store/storetest"
	"github.com/directaid/directaid/internal/pgtest"
	"github.com/directaid/directaid/internal/testserver"
)

// migrateEmergencies are the emergencies of storetest.SynthRecord, with one public_url for both nodes so
// that their links are the same.
const migrateEmergencies = `
		public_url https://ayuda.example.org
		emergency eje-cafetero {
			title "Terremoto en el Eje Cafetero"
			occurred 2026-08-11
		}
		emergency la-mojana {
			title "Inundaciones en La Mojana"
			occurred 2026-10-02
		}`

func runMigrate(t *testing.T, dsn string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(testserver.Binary(t), append([]string{"migrate"}, args...)...)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "DIRECTAID_DATABASE_URL="+dsn)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestMigrateBadgerToPostgres: `directaid migrate --from badger <dir> --to postgres` copies 10,000
// records with their ids, times and fields; run again it creates nothing; and both stores then give the
// same answers, through the Store interface and through the API of a node on each.
func TestMigrateBadgerToPostgres(t *testing.T) {
	t.Parallel()
	dsn := pgtest.Shared(t).NewDatabase(t)
	dir := filepath.Join(t.TempDir(), "data")
	src, err := badgerstore.Open(badgerstore.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	const n = 10000
	recs := storetest.Seed(t, src, n-2, time.Now().Add(-48*time.Hour), 17*time.Second)
	// Pairs that only a byte-exact key keeps apart, and text that needs folding.
	for _, pair := range [][2]string{{"a|b", "c"}, {"a", "b|c"}} {
		r := storetest.Record(pair[0], pair[1])
		r.Title = "Insulina para Ñoño, NIÑOS y adultos"
		if _, _, err := src.Create(context.Background(), r); err != nil {
			t.Fatal(err)
		}
		recs = append(recs, r)
	}
	// Records with a life: resolved, withdrawn (personal data erased), hidden, one that expires.
	for i, r := range recs[:400] {
		status := []string{store.StatusResolved, store.StatusWithdrawn, store.StatusHidden, store.StatusOpen}[i%4]
		if _, err := src.Update(context.Background(), r.ID, func(rec *store.Record) error {
			rec.Status = status
			if status == store.StatusWithdrawn {
				rec.ErasePersonal()
			}
			if status == store.StatusOpen {
				rec.ExpiresAt = time.Now().Add(30 * 24 * time.Hour).UTC().Truncate(time.Millisecond)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	// A report, an audit entry and a secret: migrate copies them too (TestMigrateKeepsRecordLives tries them through the API).
	if _, err := src.Secret(context.Background(), "manage-token"); err != nil {
		t.Fatal(err)
	}
	if _, err := src.AddReport(context.Background(), store.Report{RecordID: recs[5].ID, Reporter: "h1", Reason: store.ReasonNotMyNumber, At: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if err := src.AppendAudit(context.Background(), store.AuditEntry{Action: "hide", RecordID: recs[5].ID, Actor: store.ActorOperator}); err != nil {
		t.Fatal(err)
	}
	if err := src.Close(); err != nil {
		t.Fatal(err)
	}

	out, err := runMigrate(t, dsn, "--from", "badger", dir, "--to", "postgres")
	if err != nil || !strings.Contains(out, fmt.Sprintf("read %d records from badger", n)) ||
		!strings.Contains(out, fmt.Sprintf(": %d created, 0 already there, 0 conflicts", n)) {
		t.Fatalf("first run: %v\n%s", err, out)
	}
	for _, want := range []string{"server secrets: 1 copied, 0 already the same, 0 kept", "community reports: 1 read, 1 created, 0 already there, 0 conflicts",
		"audit trail: 1 entries read, 1 appended, 0 already there"} {
		if !strings.Contains(out, want) {
			t.Fatalf("first run: the report should say %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "postgres://") || !strings.Contains(out, "PostgreSQL now holds 10000 records") {
		t.Fatalf("the report should name the target without its DSN and count what it holds:\n%s", out)
	}
	t.Logf("first run:\n%s", out)
	out, err = runMigrate(t, dsn, "--from", "badger", dir, "--to", "postgres", "--batch", "777")
	if err != nil || !strings.Contains(out, fmt.Sprintf(": 0 created, %d already there, 0 conflicts", n)) ||
		!strings.Contains(out, "all of them from this source") {
		t.Fatalf("second run (idempotent): %v\n%s", err, out)
	}
	for _, want := range []string{"server secrets: 0 copied, 1 already the same, 0 kept", "community reports: 1 read, 0 created, 1 already there, 0 conflicts",
		"audit trail: 1 entries read, 0 appended, 1 already there"} {
		if !strings.Contains(out, want) {
			t.Fatalf("second run: the report should say %q:\n%s", want, out)
		}
	}

	ctx := context.Background()
	src, err = badgerstore.Open(badgerstore.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	db, err := pgstore.Open(dsn)
	if err != nil {
		t.Fatal(err)
	}
	dst := pgstore.NewStore(db)
	compareStores(t, src, dst, recs)
	// Store-level comparison done: a node on each store next (Badger needs its directory lock back).
	if err := src.Close(); err != nil {
		t.Fatal(err)
	}

	// A target with records and another manage secret: refused (nothing written) unless told to keep its own.
	kept, err := dst.Secret(ctx, "manage-token")
	if err != nil {
		t.Fatal(err)
	}
	other := []byte("another installation's secret!!")
	if _, err := dst.PutSecret(ctx, "manage-token", other, true); err != nil {
		t.Fatal(err)
	}
	out, err = runMigrate(t, dsn, "--from", "badger", dir, "--to", "postgres")
	if err == nil || !strings.Contains(out, "other server secrets (manage-token)") || !strings.Contains(out, "--keep-target-secrets") ||
		strings.Contains(out, "records from badger") {
		t.Fatalf("a target with another secret: %v\n%s", err, out)
	}
	out, err = runMigrate(t, dsn, "--from", "badger", dir, "--to", "postgres", "--keep-target-secrets")
	if got, _ := dst.Secret(ctx, "manage-token"); err != nil || !strings.Contains(out, "0 copied, 0 already the same, 1 kept") || string(got) != string(other) {
		t.Fatalf("--keep-target-secrets: %v, secret %q\n%s", err, got, out)
	}
	if _, err := dst.PutSecret(ctx, "manage-token", kept, true); err != nil {
		t.Fatal(err)
	}

	// A record that only the target holds: a new run refuses to mix unless told to merge.
	foreign := storetest.Record("otra-instalacion", "x-1")
	if _, _, err := dst.Create(ctx, foreign); err != nil {
		t.Fatal(err)
	}
	db.Close()
	out, err = runMigrate(t, dsn, "--from", "badger", dir, "--to", "postgres")
	if err == nil || !strings.Contains(out, "1 of them not in") || !strings.Contains(out, "--merge") {
		t.Fatalf("a target with another installation's record: %v\n%s", err, out)
	}
	out, err = runMigrate(t, dsn, "--from", "badger", dir, "--to", "postgres", "--merge")
	if err != nil || !strings.Contains(out, fmt.Sprintf(": 0 created, %d already there, 0 conflicts", n)) {
		t.Fatalf("--merge: %v\n%s", err, out)
	}
	if out, err := runMigrate(t, dsn, "--from", "badger", filepath.Join(dir, "nope"), "--to", "postgres"); err == nil ||
		!strings.Contains(out, "no Badger database") {
		t.Fatalf("a directory without a database: %v\n%s", err, out)
	}

	compareNodes(t, dsn, dir, recs, foreign.ID)
}

// compareStores asks both stores the same questions and wants the same answers.
func compareStores(t *testing.T, a, b store.Store, recs []*store.Record) {
	t.Helper()
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range 300 {
		id := recs[rng.IntN(len(recs))].ID
		if i < 100 {
			id = recs[i].ID // the changed ones
		}
		ra, errA := a.Get(ctx, id)
		rb, errB := b.Get(ctx, id)
		if errA != nil || errB != nil || !sameJSON(ra, rb) || !ra.CreatedAt.Equal(rb.CreatedAt) {
			t.Fatalf("Get %s: badger %v %v\npostgres %v %v", id, errA, asJSON(ra), errB, asJSON(rb))
		}
	}
	specs := []store.ListSpec{
		{Limit: 100},
		{Limit: 37, EmergencySlug: "la-mojana", Type: "request"},
		{Limit: 50, EmergencySlug: "eje-cafetero", Type: "request", Category: "salud", Urgency: "urgent"},
		{Limit: 20, EmergencySlug: "eje-cafetero", Type: "offer", Category: "transporte", Words: []string{"medic"}},
		{Limit: 10, Words: []string{"insulina", "ninos"}},
		{Limit: 25, Near: true, Lat: 4.55, Lon: -75.66, RadiusKm: 2},
		{Limit: 25, Near: true, Lat: 4.50, Lon: -75.70, RadiusKm: 4, Type: "request", EmergencySlug: "la-mojana"},
		{Limit: 100, Since: time.Now().Add(-12 * time.Hour)},
		{Limit: 100, Since: time.Now().Add(-time.Minute)}, // the changes above, oldest first
		{Limit: 30, Status: store.StatusResolved, EmergencySlug: "la-mojana"},
	}
	for _, spec := range specs {
		idsA, pagesA := storetest.PageAll(t, a, spec)
		idsB, pagesB := storetest.PageAll(t, b, spec)
		if len(idsA) == 0 || !slices.Equal(idsA, idsB) {
			t.Fatalf("%+v: badger %d ids, postgres %d; want the same non-empty list", spec, len(idsA), len(idsB))
		}
		if len(spec.Words) > 0 {
			// Badger bounds the records a q search reads per page (its pages may end early): compare the
			// whole list, not page by page.
			pagesA, pagesB = joinPages(pagesA), joinPages(pagesB)
		}
		if len(pagesA) != len(pagesB) {
			t.Fatalf("%+v: %d pages on badger, %d on postgres", spec, len(pagesA), len(pagesB))
		}
		pa, pb := pagesA[0], pagesB[0]
		if pa.TotalExact && pb.TotalExact && pa.Total != pb.Total {
			t.Fatalf("%+v: total %d on badger, %d on postgres", spec, pa.Total, pb.Total)
		}
		for i := range pagesA {
			if !sameJSON(pagesA[i].Records, pagesB[i].Records) || (spec.Near && !slices.Equal(pagesA[i].Distances, pagesB[i].Distances)) {
				for j := range pagesA[i].Records {
					if x, y := asJSON(pagesA[i].Records[j]), asJSON(pagesB[i].Records[j]); x != y {
						t.Fatalf("%+v: page %d differs at %d:\nbadger   %s\npostgres %s", spec, i, j, x, y)
					}
				}
				t.Fatalf("%+v: page %d differs: distances %v, %v", spec, i, pagesA[i].Distances, pagesB[i].Distances)
			}
		}
	}
	slugs := []string{"eje-cafetero", "la-mojana", "sin-registros"}
	agA, errA := a.Aggregates(ctx, slugs)
	agB, errB := b.Aggregates(ctx, slugs)
	if errA != nil || errB != nil {
		t.Fatal(errA, errB)
	}
	for _, slug := range slugs {
		x, y := agA[slug], agB[slug]
		if fmt.Sprint(x.Counts) != fmt.Sprint(y.Counts) || fmt.Sprint(x.Statuses) != fmt.Sprint(y.Statuses) || x.NeededPeople != y.NeededPeople || !x.Newest.Equal(y.Newest) {
			t.Fatalf("aggregates of %s: badger %+v, postgres %+v", slug, x, y)
		}
	}
}

// compareNodes starts a node on each store and compares the API's answers (but for generatedAt). The
// target holds one record more, foreignID, which the queries avoid or which is left out of the compare.
func compareNodes(t *testing.T, dsn, dir string, recs []*store.Record, foreignID string) {
	t.Helper()
	onBadger := testserver.Start(t, testserver.Options{DataDir: dir, Emergencies: migrateEmergencies})
	onPG := testserver.Start(t, testserver.Options{Postgres: dsn, Emergencies: migrateEmergencies})
	rng := rand.New(rand.NewPCG(5, 6))
	paths := []string{
		"/api/public/v1/help?view=list&emergencySlug=la-mojana&limit=100",
		"/api/public/v1/help?view=list&emergencySlug=eje-cafetero&type=request&category=salud&limit=20",
		"/api/public/v1/help?view=list&q=insulina%20ni%C3%B1os",
		"/api/public/v1/help?view=list&emergencySlug=la-mojana&q=medico&limit=5",
		"/api/public/v1/help?view=list&latitude=4.60&longitude=-75.60&radiusKm=2.5&limit=50",
		"/api/public/v1/help?view=list&emergencySlug=la-mojana&format=csv&limit=100",
		"/api/public/v1/help?view=list&emergencySlug=la-mojana&latitude=4.5&longitude=-75.7&radiusKm=5&format=geojson",
		"/api/public/v1/help?view=panorama&emergencySlug=la-mojana",
	}
	for i := range 24 {
		paths = append(paths, "/api/public/v1/help?view=detail&id="+recs[rng.IntN(len(recs))].ID)
		if i%4 != 1 && i%4 != 2 { // withdrawn and hidden records are 410 (compared below)
			paths = append(paths, "/api/public/v1/help?view=detail&id="+recs[i].ID)
		}
	}
	paths = append(paths, "/api/public/v1/help?view=list&emergencySlug=la-mojana&status=resolved",
		"/api/public/v1/help?view=list&emergencySlug=la-mojana&since="+url.QueryEscape(time.Now().Add(-time.Minute).UTC().Format(time.RFC3339))+"&limit=50")
	generated := regexp.MustCompile(`"generatedAt":\s*"[^"]*"`)
	compare := func(path string) []byte {
		respA, bodyA := onBadger.Do("GET", path, nil)
		respB, bodyB := onPG.Do("GET", path, nil)
		onBadger.CheckOpenAPI(respA.Request, respA, bodyA)
		onPG.CheckOpenAPI(respB.Request, respB, bodyB)
		a, b := generated.ReplaceAll(bodyA, nil), generated.ReplaceAll(bodyB, nil)
		if strings.Contains(path, "&q=") {
			// Badger bounds what a q search reads and may estimate its total (totalExact false), where
			// PostgreSQL counts: the records must be the same, the totals may differ.
			var la, lb struct {
				Items      json.RawMessage `json:"items"`
				TotalExact bool            `json:"totalExact"`
			}
			_ = json.Unmarshal(bodyA, &la)
			_ = json.Unmarshal(bodyB, &lb)
			a, b = la.Items, lb.Items
			if !lb.TotalExact {
				t.Errorf("GET %s on postgres: an estimated total", path)
			}
		}
		if respA.StatusCode != 200 || respA.StatusCode != respB.StatusCode || string(a) != string(b) {
			t.Fatalf("GET %s: badger %d, postgres %d\nbadger:   %.600s\npostgres: %.600s", path, respA.StatusCode, respB.StatusCode, a, b)
		}
		if strings.Contains(string(bodyB), foreignID) {
			t.Fatalf("GET %s shows the record only the target holds; pick another query", path)
		}
		return bodyA
	}
	for _, path := range paths {
		compare(path)
	}
	// A radius list paged by its cursors, page by page on both.
	const near = "/api/public/v1/help?view=list&latitude=4.45&longitude=-75.75&radiusKm=3&limit=30"
	next := near
	for page := 0; next != "" && page < 5; page++ {
		var list struct {
			NextCursor string `json:"nextCursor"`
		}
		_ = json.Unmarshal(compare(next), &list)
		next = ""
		if list.NextCursor != "" {
			next = near + "&cursor=" + list.NextCursor
		} else if page == 0 {
			t.Fatal("the radius list fits in one page; widen it so that cursors are compared")
		}
	}
}

// joinPages makes one page of pages (their records and distances, the first page's total).
func joinPages(pages []*store.ListResult) []*store.ListResult {
	all := &store.ListResult{Total: pages[0].Total, TotalExact: pages[0].TotalExact}
	for _, p := range pages {
		all.Records = append(all.Records, p.Records...)
		all.Distances = append(all.Distances, p.Distances...)
	}
	return []*store.ListResult{all}
}

func sameJSON(a, b any) bool { return asJSON(a) == asJSON(b) }

func asJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
