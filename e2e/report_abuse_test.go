package e2e

import (
	"fmt"
	"io"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/directaid/directaid/internal/testserver"
	"github.com/directaid/directaid/schema"
)

// TestReportsCannotBlankTheNetworkThroughTheBinary: five addresses (127.0.0.2–6) report every record of
// an emergency of 400, as someone else's number and as spam, through the API, the site's /reportar form
// and MCP reportar_publicacion, with no rate limit in their way: at most 10 phones and 3 records are
// hidden without a moderator, and every report the server accepted is counted as recorded.
func TestReportsCannotBlankTheNetworkThroughTheBinary(t *testing.T) {
	s := testserver.Start(t, testserver.Options{})
	ids := make([]string, 400)
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < len(ids); i += 8 {
				body := validRequest()
				body["externalId"] = fmt.Sprintf("abuse-%d", i)
				body["contactWhatsapp"] = fmt.Sprintf("300 %07d", 1000000+i)
				resp, out := publish(t, s, body)
				if resp.StatusCode != 201 {
					t.Errorf("publish %d: %d %v", i, resp.StatusCode, out)
					return
				}
				ids[i] = out["id"].(string)
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	var accepted, gone, other atomic.Int64
	count := func(code int) {
		switch code {
		case 202, 200:
			accepted.Add(1)
		case 410:
			gone.Add(1) // hidden meanwhile: refused to everyone, recorded nowhere
		default:
			other.Add(1)
		}
	}
	for a := 2; a <= 6; a++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ip := fmt.Sprintf("127.0.0.%d", a)
			cs := sdkSessionFrom(t, s, ip)
			client := fromAddr(ip)
			for i, id := range ids {
				for _, reason := range []string{"not_my_number", "spam"} {
					switch (i + a) % 3 {
					case 0:
						resp, err := client.Do(s.NewRequest("POST", "/api/public/v1/help/"+id+"/reports", []byte(`{"reason":"`+reason+`"}`), "Content-Type", "application/json"))
						if err != nil {
							t.Error(err)
							return
						}
						_, _ = io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
						count(resp.StatusCode)
					case 1:
						resp, err := client.Do(s.NewRequest("POST", schema.ReportFormPath, []byte(url.Values{"id": {id}, "reason": {reason}}.Encode()),
							"Content-Type", "application/x-www-form-urlencoded"))
						if err != nil {
							t.Error(err)
							return
						}
						_, _ = io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
						count(resp.StatusCode)
					default:
						res := callTool(t, cs, schema.ToolReport, map[string]any{"id": id, "reason": reason})
						if res.IsError {
							count(410)
						} else {
							count(202)
						}
					}
				}
			}
		}()
	}
	wg.Wait()
	if other.Load() > 0 {
		t.Fatalf("%d reports got an answer other than 202 or 410", other.Load())
	}
	phones, records := 0, 0
	for _, id := range ids {
		resp, body := call(t, s, "GET", "/api/public/v1/help?view=detail&id="+id, nil)
		switch {
		case resp.StatusCode == 410:
			records++
		case resp.StatusCode != 200:
			t.Fatalf("detail of %s: %d %v", id, resp.StatusCode, body)
		case body["contact"].(map[string]any)["available"] == false:
			phones++
		}
	}
	_, fams := scrape(t, s)
	recorded, _ := value(fams, "directaid_reports_total", nil)
	queued, _ := value(fams, "directaid_reports_total", map[string]string{"outcome": schema.ReportQueued})
	t.Logf("4,000 reports: %d accepted (%v recorded, %v queued), %d refused as gone; hidden: %d phones, %d records",
		accepted.Load(), recorded, queued, gone.Load(), phones, records)
	if phones > 10 || records > 3 {
		t.Fatalf("five addresses hid %d phones and %d records without a moderator: want at most 10 and 3", phones, records)
	}
	if int64(recorded) != accepted.Load() || queued == 0 {
		t.Fatalf("%d reports accepted, %v recorded (%v queued)", accepted.Load(), recorded, queued)
	}
}
