package pgstore

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/directaid/directaid/backend/store"
	"github.com/directaid/directaid/internal/pgtest"
)

// cancelAt cancels the context of the list it is armed for once PostgreSQL has answered its n-th
// statement, alone or in a pipeline.
type cancelAt struct {
	mu     sync.Mutex
	n      int
	cancel context.CancelFunc
}

func (c *cancelAt) arm(n int, cancel context.CancelFunc) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n, c.cancel = n, cancel
}

func (c *cancelAt) step() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cancel != nil {
		if c.n--; c.n == 0 {
			c.cancel()
		}
	}
}

func (c *cancelAt) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	return ctx
}
func (c *cancelAt) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) { c.step() }
func (c *cancelAt) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return ctx
}
func (c *cancelAt) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) { c.step() }
func (c *cancelAt) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData)     {}

// TestListCancelledMidPipeline: a list whose context ends after any of its statements (alone or in a
// pipeline: the pipelines of listCounted and listNear, the feed's total under its lock, a q total) fails
// with the context's error and leaves nothing behind — no transaction open on the server, no feed lock
// held (it would hold every write off), the pool's only connection usable: the next list answers what an
// untouched pool answers.
func TestListCancelledMidPipeline(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.Shared(t).NewDatabase(t)
	tracer := &cancelAt{}
	s := tracedStore(t, dsn, tracer, 1)
	start := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	importDense(t, s, start)
	ref, err := Open(dsn) // an untouched pool: the answers to compare with, and the server's state
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	rs := NewStore(ref)
	leftover := func() string {
		var open, locks int
		if err := ref.Pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()
			AND state LIKE 'idle in transaction%'), (SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'
			AND database = (SELECT oid FROM pg_database WHERE datname = current_database()))`).Scan(&open, &locks); err != nil {
			t.Fatal(err)
		}
		if open+locks == 0 {
			return ""
		}
		return fmt.Sprintf("%d sessions idle in a transaction, %d advisory locks held", open, locks)
	}
	near := store.ListSpec{Near: true, Lat: 4.527, Lon: -75.673, RadiusKm: 2.5, Limit: 20}
	for _, c := range []struct {
		name string
		spec store.ListSpec
	}{
		{"counted", store.ListSpec{Limit: 20, Type: "request"}},
		{"radius estimated", near},
		{"radius edge counted", store.ListSpec{Near: true, Lat: 4.527, Lon: -75.673, RadiusKm: 0.3, Limit: 20}},
		{"radius q", store.ListSpec{Near: true, Lat: near.Lat, Lon: near.Lon, RadiusKm: near.RadiusKm, Limit: 20, Words: []string{"agua"}}},
		{"q", store.ListSpec{Limit: 20, Words: []string{"potable"}}},
		{"feed, counters less before", store.ListSpec{Limit: 20, Since: start.Add(1000 * time.Millisecond)}},
		{"feed, estimated", store.ListSpec{Limit: 20, Since: start.Add(3000 * time.Millisecond)}},
	} {
		t.Run(c.name, func(t *testing.T) {
			want, err := rs.List(ctx, &c.spec)
			if err != nil {
				t.Fatal(err)
			}
			for n := 1; ; n++ {
				cctx, cancel := context.WithCancel(ctx)
				tracer.arm(n, cancel)
				_, err := s.List(cctx, &c.spec)
				cancelled := cctx.Err() != nil
				tracer.arm(0, nil)
				cancel()
				if cancelled && err != nil && !errors.Is(err, context.Canceled) {
					t.Fatalf("cancelled after statement %d: %v, want the context's error", n, err)
				}
				// The server notices a closed connection at once, not always before this looks.
				var left string
				for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
					if left = leftover(); left == "" || time.Now().After(deadline) {
						break
					}
				}
				if left != "" {
					t.Fatalf("cancelled after statement %d: %s", n, left)
				}
				lctx, lcancel := context.WithTimeout(ctx, 20*time.Second)
				got, err := s.List(lctx, &c.spec)
				lcancel()
				if err != nil || !reflect.DeepEqual(got, want) {
					t.Fatalf("the list after one cancelled after statement %d: %v\n%+v\nwant %+v", n, err, got, want)
				}
				if !cancelled { // the list ran to its end before its n-th statement answered
					if n < 3 {
						t.Fatalf("only %d statements: the cancellation was not tested", n-1)
					}
					t.Logf("cancelled after each of its %d statements", n-1)
					return
				}
			}
		})
	}
}
