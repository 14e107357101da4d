package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/directaid/directaid/internal/erasescan"
	"github.com/directaid/directaid/internal/testserver"
)

// fromAddr is a client whose connections come from the loopback address ip (127.0.0.2, …): to the
// server, a distinct reporter.
func fromAddr(ip string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 10 * time.Second}
	return &http.Client{Transport: &http.Transport{DialContext: d.DialContext}, Timeout: 30 * time.Second}
}

// report posts a report of id from ip and checks the answer against the OpenAPI document.
func report(t *testing.T, s *testserver.Server, ip, id string, body any) (*http.Response, map[string]any) {
	t.Helper()
	b := mustJSON(t, body)
	path := "/api/public/v1/help/" + id + "/reports"
	req := s.NewRequest("POST", path, b, "Content-Type", "application/json")
	resp, err := fromAddr(ip).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	s.CheckOpenAPI(s.NewRequest("POST", path, b, "Content-Type", "application/json"), resp, raw)
	var out map[string]any
	_ = json.Unmarshal(raw, &out)
	return resp, out
}

// moderate runs `directaid moderate args…` against the server's admin endpoint.
func moderate(t *testing.T, s *testserver.Server, args ...string) string {
	t.Helper()
	admin := strings.TrimPrefix(s.AdminURL, "http://")
	cmd := exec.Command(testserver.Binary(t), append(append([]string{"moderate"}, args...), "--admin", admin)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("directaid moderate %v: %v\n%s", args, err, out)
	}
	return string(out)
}

func detailStatus(t *testing.T, s *testserver.Server, id string) (int, map[string]any) {
	t.Helper()
	resp, body := call(t, s, "GET", "/api/public/v1/help?view=detail&id="+id, nil)
	return resp.StatusCode, body
}

// Reports: three distinct reporters hide a record, the same reporter twice counts once; not_my_number
// hides the phone at once and the record stays listed; the operator's queue shows both, restore brings
// the record back, erase leaves a tombstone, and the audit trail tells who did what.
func TestReportsAndModeration(t *testing.T) {
	t.Parallel()
	s := testserver.Start(t, testserver.Options{})
	_, a := publish(t, s, validRequest())
	_, b := publish(t, s, validOffer())
	idA, idB := a["id"].(string), b["id"].(string)

	// Invalid reports: every violation named by a JSON pointer.
	resp, body := report(t, s, "127.0.0.2", idA, map[string]any{"reason": "aburrido", "note": strings.Repeat("n", 301), "extra": 1})
	if resp.StatusCode != 400 || body["code"] != "invalid_body" {
		t.Fatalf("bad report: %d %v", resp.StatusCode, body)
	}
	if f := strings.Join(fields(body), " "); !strings.Contains(f, "/reason") || !strings.Contains(f, "/note") || !strings.Contains(f, "extra") {
		t.Fatalf("details name every field: %v", body)
	}
	if resp, body := report(t, s, "127.0.0.2", "01k2x3y4z5a6b7c8", map[string]any{"reason": "spam"}); resp.StatusCode != 404 || body["code"] != "not_found" {
		t.Fatalf("unknown record: %d %v", resp.StatusCode, body)
	}

	for i, r := range []struct{ ip, reason string }{{"127.0.0.2", "spam"}, {"127.0.0.2", "fraud"}, {"127.0.0.3", "spam"}} {
		resp, body := report(t, s, r.ip, idA, map[string]any{"reason": r.reason, "note": "pide dinero por adelantado"})
		if resp.StatusCode != 202 || body["ok"] != true || body["id"] != idA {
			t.Fatalf("report %d: %d %v", i, resp.StatusCode, body)
		}
		if code, _ := detailStatus(t, s, idA); code != 200 {
			t.Fatalf("after report %d (2 distinct reporters at most) the record should stay: %d", i, code)
		}
	}
	report(t, s, "127.0.0.4", idA, map[string]any{"reason": "spam"})
	if code, body := detailStatus(t, s, idA); code != 410 || body["code"] != "gone" {
		t.Fatalf("three distinct reporters hide it: %d %v", code, body)
	}
	if resp, _ := report(t, s, "127.0.0.5", idA, map[string]any{"reason": "spam"}); resp.StatusCode != 410 {
		t.Fatalf("a hidden record cannot be reported again: %d", resp.StatusCode)
	}

	// not_my_number: one report hides the phone at once; the record stays listed.
	if code, body := detailStatus(t, s, idB); code != 200 || body["contact"].(map[string]any)["whatsapp"] == nil {
		t.Fatalf("before: %d %v", code, body)
	}
	report(t, s, "127.0.0.6", idB, map[string]any{"reason": "not_my_number"})
	code, body := detailStatus(t, s, idB)
	contact, _ := body["contact"].(map[string]any)
	if code != 200 || contact["available"] != false || contact["whatsapp"] != nil || contact["whatsappUrl"] != nil {
		t.Fatalf("not_my_number hides the phone at once: %d %v", code, body)
	}
	_, list := call(t, s, "GET", "/api/public/v1/help?view=list&emergencySlug=eje-cafetero&limit=100", nil)
	if !strings.Contains(fmt.Sprint(list["items"]), idB) || strings.Contains(fmt.Sprint(list["items"]), idA) {
		t.Fatalf("B stays listed, A (hidden) does not: %v", list["items"])
	}

	// The operator.
	q := moderate(t, s, "queue")
	if !strings.Contains(q, idA) || !strings.Contains(q, idB) || !strings.Contains(q, "pide dinero") || strings.Contains(q, "127.0.0.") {
		t.Fatalf("queue: %s", q)
	}
	moderate(t, s, "restore", idA)
	if code, body := detailStatus(t, s, idA); code != 200 || body["contact"].(map[string]any)["whatsapp"] == nil {
		t.Fatalf("restore brings it back: %d %v", code, body)
	}
	// Reviewed reports no longer count: one more reporter does not hide it again.
	report(t, s, "127.0.0.7", idA, map[string]any{"reason": "spam"})
	if code, _ := detailStatus(t, s, idA); code != 200 {
		t.Fatalf("after review, one new report does not hide: %d", code)
	}
	moderate(t, s, "erase", idB)
	if code, _ := detailStatus(t, s, idB); code != 410 {
		t.Fatalf("erased: %d", code)
	}
	out := moderate(t, s, "status", idA, "resolved")
	if !strings.Contains(out, `"status":"resolved"`) {
		t.Fatalf("status: %s", out)
	}
	var trail []map[string]any
	if err := json.Unmarshal([]byte(moderate(t, s, "audit")), &trail); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range trail {
		got = append(got, fmt.Sprintf("%s/%s/%t", e["action"], e["actor"], e["recordId"] == idA))
	}
	want := []string{"report/community/true", "report/community/true", "report/community/true", "report/community/true", "hide/community/true",
		"report/community/false", "hide_phone/community/false", "restore/operator/true", "report/community/true", "erase/operator/false", "set_status/operator/true"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("audit trail:\n got %v\nwant %v", got, want)
	}
	raw, _ := json.Marshal(trail)
	for _, personal := range []string{"Ana", "300 123", "3001234567", "pide dinero", "127.0.0."} {
		if bytes.Contains(raw, []byte(personal)) {
			t.Fatalf("the audit trail holds personal data %q: %s", personal, raw)
		}
	}
}

// Real erasure through the binary: an operator's erase, then the maintenance cycle (run now through the
// admin endpoint), and the number is in no file of the data directory, in any form it was stored in.
// The publisher's withdrawal through the API is the other door to the same erasure.
func TestEraseLeavesNoBytesOnDisk(t *testing.T) {
	t.Parallel()
	t.Run("operator erase", func(t *testing.T) {
		testEraseLeavesNoBytes(t, func(s *testserver.Server, id, _ string) { moderate(t, s, "erase", id) })
	})
	t.Run("publisher withdraw", func(t *testing.T) {
		testEraseLeavesNoBytes(t, func(s *testserver.Server, id, token string) {
			if resp, out, _ := act(t, s, id, token, "withdraw"); resp.StatusCode != 200 || out["status"] != "withdrawn" {
				t.Fatalf("withdraw: %d %v", resp.StatusCode, out)
			}
		})
	})
}

func testEraseLeavesNoBytes(t *testing.T, erase func(s *testserver.Server, id, token string)) {
	s := testserver.Start(t, testserver.Options{})
	digits := fmt.Sprintf("31%08d", time.Now().UnixNano()%1e8)
	sent := digits[:3] + " " + digits[3:6] + " " + digits[6:]
	_, rec := publish(t, s, with(validRequest(), "contactWhatsapp", sent, "contactName", "Eduviges Piedrahíta", "address", "Calle Erasmo 77"))
	id := rec["id"].(string)
	needles := [][]byte{[]byte("+57" + digits), []byte(digits), []byte(sent), []byte("Eduviges"), []byte("Calle Erasmo")}
	erase(s, id, rec["manageToken"].(string))
	if found, _ := erasescan.Find(s.DataDir, needles...); len(found) == 0 {
		t.Fatal("before the cycle the number should still be in the files (else this test proves nothing)")
	}
	moderate(t, s, "maintain")
	found, err := erasescan.Find(s.DataDir, needles...)
	if err != nil {
		t.Fatal(err)
	}
	if len(found) > 0 {
		t.Fatalf("erased data still on disk:\n%s", strings.Join(found, "\n"))
	}
	if code, _ := detailStatus(t, s, id); code != 410 {
		t.Fatalf("tombstone: %d", code)
	}
}

// Reports have their own per-IP limit (the shipped Caddyfiles' `report` zone), answered with the JSON 429.
func TestReportsRateLimited(t *testing.T) {
	t.Parallel()
	s := testserver.Start(t, testserver.Options{PublishEvents: 2})
	_, rec := publish(t, s, validRequest())
	id := rec["id"].(string)
	var last *http.Response
	var body map[string]any
	for range 3 {
		last, body = report(t, s, "127.0.0.9", id, map[string]any{"reason": "duplicate"})
	}
	if last.StatusCode != 429 || body["code"] != "rate_limited" || last.Header.Get("Retry-After") == "" || !strings.Contains(fmt.Sprint(body["error"]), "reportes") {
		t.Fatalf("third report in the window: %d %v", last.StatusCode, body)
	}
	// Another address has its own budget.
	if resp, _ := report(t, s, "127.0.0.10", id, map[string]any{"reason": "duplicate"}); resp.StatusCode != 202 {
		t.Fatalf("another reporter: %d", resp.StatusCode)
	}
}

// A response that three reporters hid is in the operator's queue under its record, and `directaid moderate
// restore-response` shows it again: it counts again in the record's detail.
func TestModeratorRestoresAResponse(t *testing.T) {
	t.Parallel()
	s := testserver.Start(t, testserver.Options{})
	_, a := publish(t, s, validRequest())
	id := a["id"].(string)
	resp, raw := s.Do("POST", "/api/public/v1/help/"+id+"/responses", []byte(`{"message":"Tengo insulina refrigerada"}`), "Content-Type", "application/json")
	var r map[string]any
	if err := json.Unmarshal(raw, &r); err != nil || resp.StatusCode != 201 || r["counted"] != true {
		t.Fatalf("respond: %d %s", resp.StatusCode, raw)
	}
	rid := r["responseId"].(string)
	responses := func() float64 {
		t.Helper()
		_, body := detailStatus(t, s, id)
		n, _ := body["responses"].(float64)
		return n
	}
	for _, ip := range []string{"127.0.0.2", "127.0.0.3", "127.0.0.4"} {
		req := s.NewRequest("POST", "/api/public/v1/help/"+id+"/responses/"+rid+"/reports", mustJSON(t, map[string]any{"reason": "fraud"}),
			"Content-Type", "application/json")
		resp, err := fromAddr(ip).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 202 {
			t.Fatalf("report from %s: %d", ip, resp.StatusCode)
		}
	}
	if n := responses(); n != 0 {
		t.Fatalf("three reporters did not hide the response: %v", n)
	}
	var q []struct {
		Record          struct{ ID string }
		HiddenResponses []struct {
			ID, Message string
			Reporters   []string
		}
	}
	if err := json.Unmarshal([]byte(moderate(t, s, "queue")), &q); err != nil {
		t.Fatal(err)
	}
	if len(q) != 1 || q[0].Record.ID != id || len(q[0].HiddenResponses) != 1 || q[0].HiddenResponses[0].ID != rid ||
		q[0].HiddenResponses[0].Message != "Tengo insulina refrigerada" || len(q[0].HiddenResponses[0].Reporters) != 3 {
		t.Fatalf("queue: %+v", q)
	}
	if out := moderate(t, s, "restore-response", id, rid); !strings.Contains(out, rid) {
		t.Fatalf("restore-response: %s", out)
	}
	if n := responses(); n != 1 {
		t.Fatalf("after restore-response the response counts %v times, want 1", n)
	}
	var trail []map[string]any
	if err := json.Unmarshal([]byte(moderate(t, s, "audit")), &trail); err != nil {
		t.Fatal(err)
	}
	if e := trail[len(trail)-1]; e["action"] != "restore_response" || e["recordId"] != id || e["actor"] != "operator" {
		t.Fatalf("the audit trail's last entry: %v", e)
	}
}

// A reload keeps what the abuse bounds counted: a reporter that hid its two numbers of the hour hides no
// third after `directaid reload` with a changed Caddyfile, where a fresh Service would have let it.
func TestReloadKeepsTheAbuseWindows(t *testing.T) {
	t.Parallel()
	s := testserver.Start(t, testserver.Options{})
	var ids []string
	for i := range 3 {
		req := validRequest()
		req["externalId"] = fmt.Sprintf("reload-window-%d", i)
		req["contactWhatsapp"] = fmt.Sprintf("300 555 000%d", i) // three numbers: the same one counts once
		_, rec := publish(t, s, req)
		ids = append(ids, rec["id"].(string))
	}
	for _, id := range ids[:2] {
		if _, res := report(t, s, "127.0.0.9", id, map[string]any{"reason": "not_my_number"}); res["outcome"] != "hid_phone" {
			t.Fatalf("report of %s: %v", id, res)
		}
	}
	reloadWith(t, s, "request_ttl 20d")
	if _, res := report(t, s, "127.0.0.9", ids[2], map[string]any{"reason": "not_my_number"}); res["outcome"] != "queued" {
		t.Fatalf("a third phone by the same reporter after the reload: %v, want queued", res)
	}
}
