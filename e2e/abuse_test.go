package e2e

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/directaid/directaid/internal/testserver"
	"github.com/directaid/directaid/schema"
)

// Abuse: the publish limit per client, spoofed client addresses, slow clients, idle connections.

// serversBlock returns the `servers { … }` global option of a Caddyfile.
func serversBlock(t *testing.T, cf string) string {
	t.Helper()
	i := strings.Index(cf, "\tservers {\n")
	j := strings.Index(cf[max(i, 0):], "\n\t}\n")
	if i < 0 || j < 0 {
		t.Fatalf("no servers block in:\n%s", cf)
	}
	return cf[i : i+j+len("\n\t}\n")]
}

// startShipped starts a server whose `servers` options are those of the shipped Caddyfile (timeouts,
// header size, the trusted_proxies line), with the read timeouts shortened to 2 s so that tests of slow
// clients finish quickly; edit may change the block further.
func startShipped(t *testing.T, o testserver.Options, edit func(block string) string) *testserver.Server {
	t.Helper()
	shipped, err := readFile("../Caddyfile")
	if err != nil {
		t.Fatal(err)
	}
	block := serversBlock(t, shipped)
	for _, opt := range []string{"read_header", "read_body"} {
		re := regexp.MustCompile(`\b` + opt + ` \S+`)
		if !re.MatchString(block) {
			t.Fatalf("the shipped Caddyfile sets no %s timeout:\n%s", opt, block)
		}
		block = re.ReplaceAllString(block, opt+" 2s")
	}
	if edit != nil {
		block = edit(block)
	}
	s := testserver.Start(t, o)
	cf, err := readFile(s.CaddyfilePath())
	if err != nil {
		t.Fatal(err)
	}
	s.WriteCaddyfile(strings.Replace(cf, serversBlock(t, cf), block, 1))
	s.Reload()
	return s
}

// TestShippedCaddyfilesBoundClients: both shipped Caddyfiles cut off slow clients and bound headers.
func TestShippedCaddyfilesBoundClients(t *testing.T) {
	for _, f := range []string{"Caddyfile", "Caddyfile.local"} {
		out, err := runBinary(t, "adapt", "--config", "../"+f)
		if err != nil {
			t.Fatalf("adapt %s: %v\n%s", f, err, out)
		}
		for _, want := range []struct {
			key string
			max time.Duration
		}{{"read_header_timeout", 30 * time.Second}, {"read_timeout", time.Minute}, {"write_timeout", 2 * time.Minute}, {"idle_timeout", 10 * time.Minute}} {
			m := regexp.MustCompile(`"` + want.key + `":(\d+)`).FindStringSubmatch(out)
			if m == nil {
				t.Errorf("%s sets no %s", f, want.key)
				continue
			}
			if d, _ := strconv.ParseInt(m[1], 10, 64); d <= 0 || time.Duration(d) > want.max {
				t.Errorf("%s: %s %v, want at most %v", f, want.key, time.Duration(d), want.max)
			}
		}
		if m := regexp.MustCompile(`"max_header_bytes":(\d+)`).FindStringSubmatch(out); m == nil || len(m[1]) > 7 {
			t.Errorf("%s: max_header_bytes %v, want a bound under 1 MB", f, m)
		}
	}
}

// spoofHeaders are the headers clients use to claim another address.
var spoofHeaders = []string{"X-Forwarded-For", "X-Real-IP", "Forwarded", "True-Client-IP", "CF-Connecting-IP", "X-Client-IP"}

func spoof(i int) []string {
	ip := fmt.Sprintf("203.0.113.%d", i%250+1)
	h := spoofHeaders[i%len(spoofHeaders)]
	if h == "Forwarded" {
		ip = "for=" + ip
	}
	return []string{h, ip}
}

// checkLimited checks a 429 as DESIGN.md describes it: code rate_limited and a Retry-After in seconds
// within the window.
func checkLimited(t *testing.T, what string, resp *http.Response, body map[string]any, window time.Duration) {
	t.Helper()
	ra, err := strconv.Atoi(resp.Header.Get("Retry-After"))
	if resp.StatusCode != http.StatusTooManyRequests || err != nil || ra < 1 || time.Duration(ra)*time.Second > window+time.Second {
		t.Errorf("%s: %d Retry-After %q, want 429 with 1..%v", what, resp.StatusCode, resp.Header.Get("Retry-After"), window)
	}
	if body != nil && body["code"] != "rate_limited" {
		t.Errorf("%s: body %v", what, body)
	}
}

// TestPublishLimitHolds: once a client has spent its publish budget, no route and no claimed address
// lets it publish again — POST help, the site's form, MCP — while reads go on.
func TestPublishLimitHolds(t *testing.T) {
	const events = 4
	s := testserver.Start(t, testserver.Options{PublishEvents: events, PublishWindow: "1m"})
	for i := range events {
		if resp, out := publish(t, s, validRequest()); resp.StatusCode != http.StatusCreated {
			t.Fatalf("publication %d within the limit: %d %v", i, resp.StatusCode, out)
		}
	}
	resp, out := publish(t, s, validRequest())
	checkLimited(t, "POST help", resp, out, time.Minute)
	// Another address claimed in a header changes nothing: no trusted proxy is configured.
	for i := range 30 {
		h := append([]string{"Content-Type", "application/json"}, spoof(i)...)
		resp, out := call(t, s, "POST", "/api/public/v1/help", mustJSON(t, validRequest()), h...)
		checkLimited(t, "POST help with "+strings.Join(h[2:], ": "), resp, out, time.Minute)
	}
	form := "type=offer&emergencySlug=eje-cafetero&title=T&category=otro&contactName=N&contactWhatsapp=3001234567&publishContact=true"
	resp, _ = s.Do("POST", "/pedir", []byte(form), append([]string{"Content-Type", "application/x-www-form-urlencoded"}, spoof(1)...)...)
	checkLimited(t, "the site's form", resp, nil, time.Minute)
	resp, out = mcpPublish(t, s, schema.ToolPublishOffer, mcpArgs(validOffer()), spoof(2)...)
	checkLimited(t, "MCP publicar_ofrecimiento", resp, out, time.Minute)
	if r, _ := call(t, s, "GET", "/api/public/v1/help", nil); r.StatusCode != http.StatusOK {
		t.Errorf("reads are not limited by the publish budget: %d", r.StatusCode)
	}
	s.Stop()
	if n := countRecords(t, s.DataDir); n != events {
		t.Fatalf("%d records stored, want the %d within the limit", n, events)
	}
}

// mcpPublish calls a publishing tool over raw JSON-RPC (protocol 2025-11-25, no session needed).
func mcpPublish(t *testing.T, s *testserver.Server, tool string, args map[string]any, header ...string) (*http.Response, map[string]any) {
	t.Helper()
	msg := map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": map[string]any{"name": tool, "arguments": args}}
	h := append([]string{"Content-Type", "application/json", "Accept", "application/json, text/event-stream", "Mcp-Protocol-Version", "2025-11-25"}, header...)
	return call(t, s, "POST", "/mcp", mustJSON(t, msg), h...)
}

// TestMCPLimitCannotBeDodged sends tools/call messages written to slip past the rate limiter's reading
// of the body (duplicate, re-cased and escaped keys, a read-only tool name first): however mcp-go reads
// them, no more records may be stored than the limit allows.
func TestMCPLimitCannotBeDodged(t *testing.T) {
	const events = 2
	s := testserver.Start(t, testserver.Options{PublishEvents: events, PublishWindow: "1m"})
	args := func() string { return string(mustJSON(t, mcpArgs(validOffer()))) }
	tricks := []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"listar_emergencias","name":"publicar_ofrecimiento","arguments":%s}}`,
		`{"jsonrpc":"2.0","id":1,"method":"ping","method":"tools/call","params":{"name":"publicar_ofrecimiento","arguments":%s}}`,
		`{"jsonrpc":"2.0","id":1,"METHOD":"tools/call","Params":{"NAME":"publicar_ofrecimiento","arguments":%s}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools\/call","params":{"name":"publicar_ofrecimient\u006f","arguments":%s}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{},"name":"publicar_ofrecimiento","arguments":%s}}`,
		` ` + "\t\n" + `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"publicar_ofrecimiento","arguments":%s}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"publicar_ofrecimiento","arguments":%s},"params":{"name":"listar_emergencias"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"publicar_ofrecimiento","arguments":%s}}` + "\n",
	}
	for round := range 2 { // the second round runs over the limit
		for i, trick := range tricks {
			body := fmt.Sprintf(trick, args())
			resp, raw := s.Do("POST", "/mcp", []byte(body), "Content-Type", "application/json", "Accept", "application/json, text/event-stream")
			if resp.StatusCode >= 500 {
				t.Errorf("round %d trick %d: %d %s", round, i, resp.StatusCode, raw)
			}
		}
	}
	s.Stop()
	// Tricks that repeat a member are refused once the limiter has counted them (it reads the last copy,
	// as mcp-go would have), so fewer than events may be stored; more never.
	if n := countRecords(t, s.DataDir); n > events {
		t.Fatalf("%d records published over MCP with a limit of %d (a message dodged the limiter)", n, events)
	}
}

// TestForwardedForOnlyFromTrustedProxies enables the shipped Caddyfile's trusted-proxy lines, naming the
// loopback proxy of this test: each client behind the proxy has its own budget, the proxy's own requests
// theirs, and a client cannot get a fresh budget by putting another address in front of its own (the
// proxy appends the real one). Without these lines, see TestPublishLimitHolds: the header is ignored.
func TestForwardedForOnlyFromTrustedProxies(t *testing.T) {
	const events = 2
	s := startShipped(t, testserver.Options{PublishEvents: events, PublishWindow: "1m"}, func(block string) string {
		re := regexp.MustCompile(`#\s*(trusted_proxies static) \S+\n(\s*)#\s*(trusted_proxies_strict)`)
		if !re.MatchString(block) {
			t.Fatalf("the shipped Caddyfile no longer shows how to name a trusted proxy, strictly:\n%s", block)
		}
		return re.ReplaceAllString(block, "$1 127.0.0.1/32\n$2$3")
	})
	post := func(xff string) (*http.Response, map[string]any) {
		h := []string{"Content-Type", "application/json"}
		if xff != "" {
			h = append(h, "X-Forwarded-For", xff)
		}
		return call(t, s, "POST", "/api/public/v1/help", mustJSON(t, validRequest()), h...)
	}
	for _, client := range []string{"198.51.100.7", "198.51.100.8", ""} {
		for i := range events {
			if resp, out := post(client); resp.StatusCode != http.StatusCreated {
				t.Fatalf("client %q, publication %d within its own budget: %d %v", client, i, resp.StatusCode, out)
			}
		}
		resp, out := post(client)
		checkLimited(t, "client "+client, resp, out, time.Minute)
	}
	for i := range 10 {
		resp, out := post(fmt.Sprintf("203.0.113.%d, 198.51.100.7", i+1))
		checkLimited(t, "client 198.51.100.7 claiming another address", resp, out, time.Minute)
	}
}

// TestSlowClientsCutOff: a client that sends its headers or its body a byte at a time (slowloris) is cut
// off by the shipped timeouts (shortened here to 2 s) and does not hold up anyone else.
func TestSlowClientsCutOff(t *testing.T) {
	s := startShipped(t, testserver.Options{}, nil)
	const timeout = 2 * time.Second
	// trickle writes line every 250 ms until the server closes the connection, and returns when it did.
	trickle := func(t *testing.T, first, line string) time.Duration {
		conn := rawConn(t, s, 30*time.Second)
		start := time.Now()
		if _, err := io.WriteString(conn, first); err != nil {
			t.Fatal(err)
		}
		closed := make(chan struct{})
		go func() {
			_, _ = io.Copy(io.Discard, conn) // an answer (408, 400) may come first; then the close
			close(closed)
		}()
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-closed:
				return time.Since(start)
			case <-tick.C:
				_, _ = io.WriteString(conn, line)
				if time.Since(start) > 20*time.Second {
					t.Fatalf("a slow client is still connected after %v", time.Since(start))
				}
			}
		}
	}
	// A crowd of slow clients does not stop a real one.
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 100 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn, err := net.Dial("tcp", strings.TrimPrefix(s.URL, "http://"))
			if err != nil {
				return
			}
			defer conn.Close()
			_, _ = io.WriteString(conn, "GET / HTTP/1.1\r\nHost: x\r\n")
			for {
				select {
				case <-stop:
					return
				case <-time.After(250 * time.Millisecond):
					if _, err := io.WriteString(conn, "X-Slow: 1\r\n"); err != nil {
						return
					}
				}
			}
		}()
	}
	defer func() { close(stop); wg.Wait() }()
	time.Sleep(500 * time.Millisecond)
	start := time.Now()
	stillServes(t, s)
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("a real publication took %v among 100 slow clients", d)
	}
	t.Run("headers", func(t *testing.T) {
		d := trickle(t, "GET /api/public/v1/help HTTP/1.1\r\nHost: x\r\n", "X-Slow: 1\r\n")
		if d < timeout-500*time.Millisecond || d > timeout+5*time.Second {
			t.Errorf("closed after %v, want about %v (read_header)", d, timeout)
		}
	})
	t.Run("body", func(t *testing.T) {
		d := trickle(t, "POST /api/public/v1/help HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 10000\r\n\r\n{", " ")
		if d < timeout-500*time.Millisecond || d > timeout+5*time.Second {
			t.Errorf("closed after %v, want about %v (read_body)", d, timeout)
		}
	})
	stillServes(t, s)
}

// TestIdleConnectionsDoNotStarve opens 2,000 connections that send nothing or half a request, then
// checks that real requests are still answered promptly.
func TestIdleConnectionsDoNotStarve(t *testing.T) {
	idle := soakOr(2000, 10000)
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	// Both ends live on this machine: the test holds one descriptor per connection, the server another.
	if need := uint64(idle + 500); lim.Cur < need {
		lim.Cur = min(need, lim.Max)
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil || lim.Cur < need {
			t.Skipf("cannot raise RLIMIT_NOFILE to %d (max %d): %v", need, lim.Max, err)
		}
	}
	s := testserver.Start(t, testserver.Options{})
	addr := strings.TrimPrefix(s.URL, "http://")
	conns := make([]net.Conn, 0, idle)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for i := range idle {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		if i%2 == 1 {
			_, _ = io.WriteString(c, "POST /api/public/v1/help HTTP/1.1\r\nHost: x\r\n")
		}
		conns = append(conns, c)
	}
	c := newClient(4)
	var slowest time.Duration
	for i := range 40 {
		start := time.Now()
		if i%2 == 0 {
			status, out, err := postHelp(c, s, mustJSON(t, validRequest()))
			if err != nil || status != http.StatusCreated {
				t.Fatalf("publication among %d idle connections: %d %v %v", idle, status, out, err)
			}
		} else {
			resp, err := c.Get(s.URL + "/api/public/v1/help")
			if err != nil || resp.StatusCode != http.StatusOK {
				t.Fatalf("discovery among %d idle connections: %v %v", idle, resp, err)
			}
			resp.Body.Close()
		}
		slowest = max(slowest, time.Since(start))
	}
	if slowest > 5*time.Second {
		t.Errorf("the slowest of 40 requests took %v with %d idle connections open", slowest, idle)
	}
	t.Logf("%d idle connections open: slowest of 40 requests %v", idle, slowest)
}
