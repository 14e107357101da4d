package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/directaid/directaid/internal/pgtest"
	"github.com/directaid/directaid/internal/testserver"
)

// nodes starts n directaid nodes on one PostgreSQL database, sharing Caddy's storage there too.
func nodes(t *testing.T, dsn string, n int) []*testserver.Server {
	t.Helper()
	out := make([]*testserver.Server, n)
	for i := range out {
		out[i] = testserver.Start(t, testserver.Options{Postgres: dsn, SharedStorage: true})
	}
	return out
}

// TestPostgresThreeNodes: three nodes over one PostgreSQL. Sixty concurrent first publications of one pair,
// spread over the nodes, create exactly one record; a record published on one node is read at once on
// another, in its detail and in lists; every answer matches the OpenAPI document.
func TestPostgresThreeNodes(t *testing.T) {
	dsn := pgtest.Shared(t).NewDatabase(t)
	ns := nodes(t, dsn, 3)

	body := validRequest()
	var wg sync.WaitGroup
	var created atomic.Int32
	ids := make([]string, 60)
	start := make(chan struct{})
	for i := range 60 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			resp, out := publish(t, ns[i%3], body)
			switch resp.StatusCode {
			case http.StatusCreated:
				created.Add(1)
			case http.StatusOK:
			default:
				t.Errorf("publication %d on node %d: %d %v", i, i%3, resp.StatusCode, out)
				return
			}
			ids[i], _ = out["id"].(string)
		}()
	}
	close(start)
	wg.Wait()
	if created.Load() != 1 {
		t.Fatalf("%d publications of one pair answered 201; want exactly one", created.Load())
	}
	for i, id := range ids {
		if id != ids[0] {
			t.Fatalf("publication %d answered id %q, publication 0 %q", i, id, ids[0])
		}
	}

	offer := validOffer()
	resp, out := publish(t, ns[0], offer)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("publish on node 1: %d %v", resp.StatusCode, out)
	}
	id := out["id"].(string)
	resp, got := call(t, ns[2], "GET", "/api/public/v1/help?view=detail&id="+id, nil)
	if resp.StatusCode != http.StatusOK || got["id"] != id || got["title"] != offer["title"] {
		t.Fatalf("node 3 reads the record of node 1: %d %v", resp.StatusCode, got)
	}
	resp, list := call(t, ns[1], "GET", "/api/public/v1/help?view=list&emergencySlug=eje-cafetero&q=CAMIONETA&limit=5", nil)
	items, _ := list["items"].([]any)
	if resp.StatusCode != http.StatusOK || len(items) != 1 || items[0].(map[string]any)["id"] != id {
		t.Fatalf("node 2 lists the record of node 1 (q, accents and case folded): %d %v", resp.StatusCode, list)
	}
	resp, near := call(t, ns[2], "GET", "/api/public/v1/help?view=list&latitude=4.54&longitude=-75.67&radiusKm=5", nil)
	items, _ = near["items"].([]any)
	if resp.StatusCode != http.StatusOK || len(items) != 1 || items[0].(map[string]any)["id"] != ids[0] {
		t.Fatalf("radius list on node 3: %d %v", resp.StatusCode, near)
	}
}

// TestPostgresRestartUnderLoad: `pg_ctl restart -m fast` while clients publish. During the gap the node
// answers 503 with Retry-After and the JSON error body, never hangs; afterwards it publishes again without
// a restart, and every acknowledged record is there.
func TestPostgresRestartUnderLoad(t *testing.T) {
	cluster := pgtest.Shared(t)
	dsn := cluster.NewDatabase(t)
	ns := nodes(t, dsn, 2)
	var mu sync.Mutex
	acked := map[string]string{} // externalId → id
	var unavailable, other atomic.Int32
	stop := make(chan struct{})
	var wg sync.WaitGroup
	client := &http.Client{Timeout: 30 * time.Second}
	for c := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				body := with(validRequest(), "externalId", fmt.Sprintf("load-%d-%d", c, i))
				s := ns[(c+i)%len(ns)]
				req := s.NewRequest("POST", "/api/public/v1/help", mustJSON(t, body), "Content-Type", "application/json")
				resp, err := client.Do(req)
				if err != nil {
					t.Errorf("no answer (a hang or a reset): %v", err)
					return
				}
				raw, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				s.CheckOpenAPI(req, resp, raw)
				switch resp.StatusCode {
				case http.StatusCreated, http.StatusOK:
					var out map[string]any
					_ = json.Unmarshal(raw, &out)
					mu.Lock()
					acked[body["externalId"].(string)] = out["id"].(string)
					mu.Unlock()
				case http.StatusServiceUnavailable:
					var out map[string]any
					_ = json.Unmarshal(raw, &out)
					if resp.Header.Get("Retry-After") == "" || out["code"] != "unavailable" {
						t.Errorf("503 without Retry-After or the error body: %v %s", resp.Header, raw)
					}
					unavailable.Add(1)
					time.Sleep(100 * time.Millisecond)
				default:
					other.Add(1)
					t.Errorf("answer %d: %s", resp.StatusCode, raw)
				}
			}
		}()
	}
	time.Sleep(time.Second)
	if err := cluster.Stop("fast"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second) // the gap: every publication now fails
	if err := cluster.StartAgain(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second)
	close(stop)
	wg.Wait()
	if unavailable.Load() == 0 {
		t.Fatal("no 503 while PostgreSQL was down")
	}
	// Recovered without restarting a node: a new publication works on each.
	for i, s := range ns {
		if resp, out := publish(t, s, validOffer()); resp.StatusCode != http.StatusCreated {
			t.Fatalf("node %d after the restart: %d %v", i, resp.StatusCode, out)
		}
	}
	for ext, id := range acked {
		if resp, got := call(t, ns[0], "GET", "/api/public/v1/help?view=detail&id="+id, nil); resp.StatusCode != http.StatusOK || got["id"] != id {
			t.Fatalf("acknowledged record %s (%s) lost: %d %v", ext, id, resp.StatusCode, got)
		}
	}
	t.Logf("%d acknowledged, %d answered 503 during the restart", len(acked), unavailable.Load())
}
