package e2e

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"path/filepath"
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
	"github.com/directaid/directaid/schema"
)

// shortTimeouts make the server's read and write timeouts far shorter than a whole export to a client
// that stops reading for a while.
const shortTimeouts = `
			read_header 10s
			read_body 1s
			write 1s
			idle 2m`

// TestExportOutlivesServerTimeouts: a whole export lasts longer than the server's read_body and write
// timeouts (here 1 s; 30 s in the shipped Caddyfile) and still arrives whole, on both stores. The client
// takes 64 KiB, stops reading for 2.5 s (the socket buffers fill, the handler waits in Write), then reads
// the rest; the node logs no "export cut".
func TestExportOutlivesServerTimeouts(t *testing.T) {
	const n = 4000
	// Long descriptions: the body (~8 MB) must be much larger than the socket buffers, or the handler
	// ends before the timeouts whatever the client does.
	recs := make([]*store.Record, n)
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range recs {
		recs[i] = storetest.SynthRecord(rng, time.Now().Add(time.Duration(i-n)*time.Second), i)
		recs[i].Description = strings.Repeat("Se necesita agua, comida y cobijas. ", 50)
	}
	t.Run("badger", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "data")
		bs, err := badgerstore.Open(badgerstore.Options{Dir: dir})
		if err != nil {
			t.Fatal(err)
		}
		storetest.CreateAll(t, bs, slices.Clone(recs))
		if err := bs.Close(); err != nil {
			t.Fatal(err)
		}
		s := testserver.Start(t, testserver.Options{DataDir: dir, Timeouts: shortTimeouts, Site: "\tlog"})
		checkSlowExport(t, s, n, false)
		s.Stop()
		// HTTP/2 (h2c here; TLS in production), where the write deadline is a timer on the stream.
		checkSlowExport(t, testserver.Start(t, testserver.Options{DataDir: dir, Timeouts: shortTimeouts, Site: "\tlog",
			Servers: "\t\tprotocols h1 h2c"}), n, true)
	})
	t.Run("postgres", func(t *testing.T) {
		dsn := pgtest.Shared(t).NewDatabase(t)
		s := testserver.Start(t, testserver.Options{Postgres: dsn, Timeouts: shortTimeouts, Site: "\tlog"}) // migrates
		db, err := pgstore.Open(dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		storetest.CreateAll(t, pgstore.NewStore(db), slices.Clone(recs))
		checkSlowExport(t, s, n, false)
	})
}

func checkSlowExport(t *testing.T, s *testserver.Server, n int, h2c bool) {
	t.Helper()
	// A small receive buffer, so that the pause really stops the server's writes.
	tr := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err == nil {
			_ = c.(*net.TCPConn).SetReadBuffer(128 << 10)
		}
		return c, err
	}}
	if h2c {
		tr.Protocols = new(http.Protocols)
		tr.Protocols.SetUnencryptedHTTP2(true)
	}
	client := &http.Client{Transport: tr}
	defer client.CloseIdleConnections()
	resp, err := client.Get(s.URL + schema.HelpPath + "?view=list&format=csv&all=true")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || (h2c && resp.ProtoMajor != 2) {
		t.Fatalf("export: %d over %s", resp.StatusCode, resp.Proto)
	}
	var body bytes.Buffer
	if _, err := io.CopyN(&body, resp.Body, 64<<10); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2500 * time.Millisecond)
	if _, err := io.Copy(&body, resp.Body); err != nil {
		t.Fatalf("export cut after %d bytes: %v\nlog:\n%s", body.Len(), err, exportLog(s))
	}
	rows, err := csv.NewReader(&body).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if got := len(rows) - 2; got != n { // two header rows (names, HXL tags)
		t.Fatalf("export has %d records, want %d", got, n)
	}
	if l := exportLog(s); l != "" {
		t.Fatalf("the node logged a cut of a whole export:\n%s", l)
	}
	// The premise: the handler was still writing after the timeouts (the access log's duration).
	if d := exportDuration(t, s); d < 2*time.Second {
		t.Fatalf("the export's handler took %v, not longer than the 1 s timeouts: the test proves nothing", d)
	}
}

// exportDuration is the duration of the whole export in the node's access log.
func exportDuration(t *testing.T, s *testserver.Server) time.Duration {
	t.Helper()
	for _, line := range strings.Split(s.Log(), "\n") {
		var e struct {
			Logger   string
			Duration float64
			Request  struct{ URI string }
		}
		if json.Unmarshal([]byte(line), &e) == nil && strings.HasPrefix(e.Logger, "http.log.access") && strings.Contains(e.Request.URI, "all=true") {
			return time.Duration(e.Duration * float64(time.Second))
		}
	}
	t.Fatalf("no access log line of the export:\n%s", s.Log())
	return 0
}

// exportLog is the node's log lines of the directaid.export logger.
func exportLog(s *testserver.Server) string {
	var out []string
	for _, line := range strings.Split(s.Log(), "\n") {
		if strings.Contains(line, `"logger":"directaid.export"`) {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}
