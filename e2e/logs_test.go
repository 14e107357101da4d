package e2e

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/directaid/directaid/internal/testserver"
	"github.com/directaid/directaid/schema"
)

// TestNoContactDataInLogs publishes, through every door and in every way that fails, records whose
// contact names and phones are distinctive, with Caddy logging at DEBUG and access logs on, and then
// looks for them in every log line and everything the process printed. A phone or a name is personal
// data: the site shows it by consent, a log file must not keep it.
func TestNoContactDataInLogs(t *testing.T) {
	// 18: every publication below gets through the limit except the last loop's, which logs 429s.
	s := testserver.Start(t, testserver.Options{PublishEvents: 19, PublishWindow: "1m", Site: "\tlog"})
	const name, phone, address = "Zenobia Qwxlpvr", "+57 301 555 8899", "Vereda Wqzrtyu, finca El Qoxal"
	// The forms a phone takes: as typed, digits only, E.164, and the way a wa.me link or a log might split it.
	secrets := []string{"Qwxlpvr", "Ñandúqwx", "301 555 8899", "3015558899", "+573015558899", "573015558899", "555 8899", "5558899",
		"310 444 2277", "3104442277", "Xyzzyfoo", "Wqzrtyu", "Qoxal", "Barrio Ypsqlon", "Ypsqlon"}
	req := with(validRequest(), "contactName", name, "contactWhatsapp", phone, "address", address, "neighborhood", "Barrio Ypsqlon")
	offer := with(validOffer(), "contactName", "Ñandúqwx Pérez", "contactWhatsapp", "310 444 2277", "address", address)
	for _, b := range []map[string]any{
		req,                                      // 201
		req,                                      // 200, a faithful retry
		with(req, "contactName", name+" (otra)"), // 200, content differs
		offer,                                    // 201
		with(validRequest(), "contactName", name+strings.Repeat("x", 100)), // too long
		with(validRequest(), "contactName", name+"\nfalso registro"),       // a line break: log injection
		with(validRequest(), "contactName", name, "contactWhatsapp", "llamar al 301 555 8899 Xyzzyfoo"),
		with(validRequest(), "contactName", name, "contactWhatsapp", phone, "publishContact", false),
		with(validRequest(), "contactName", name, "contactWhatsapp", phone, "category", name),
		with(validRequest(), "contactName", name, "contactWhatsapp", phone, "type", phone),
		with(validRequest(), "contactName", name, "contactWhatsapp", phone, "emergencySlug", phone),
		with(validRequest(), "contactName", name, "contactWhatsapp", phone, "Qwxlpvr", phone),
	} {
		publish(t, s, b)
	}
	raw := string(mustJSON(t, req))
	for _, b := range []string{raw[:len(raw)/2], strings.Replace(raw, `"contactName"`, `"contactName":"x","contactName"`, 1)} {
		call(t, s, "POST", "/api/public/v1/help", []byte(b), "Content-Type", "application/json")
	}
	// The site's form, accepted and refused.
	form := url.Values{"emergencySlug": {"eje-cafetero"}, "title": {"Agua"}, "category": {"alimentos"}, "address": {address},
		"latitude": {"4.5"}, "longitude": {"-75.6"}, "contactName": {name}, "contactWhatsapp": {phone}}
	s.Do("POST", "/pedir", []byte(form.Encode()), "Content-Type", "application/x-www-form-urlencoded")
	form.Set("publishContact", "true")
	s.Do("POST", "/pedir", []byte(form.Encode()), "Content-Type", "application/x-www-form-urlencoded")
	// MCP, accepted and refused.
	mcpPublish(t, s, schema.ToolPublishOffer, mcpArgs(with(validOffer(), "contactName", name, "contactWhatsapp", phone, "address", address)))
	mcpPublish(t, s, schema.ToolPublishOffer, mcpArgs(with(validOffer(), "contactName", name, "contactWhatsapp", "Xyzzyfoo 301 555 8899")))
	// Reading the records back, the phone included (view=detail).
	_, created := publish(t, s, with(validOffer(), "contactName", name, "contactWhatsapp", phone))
	if id, ok := created["id"].(string); ok {
		s.Do("GET", "/api/public/v1/help?view=detail&id="+id, nil)
	}
	s.Do("GET", "/api/public/v1/help?view=list", nil)
	s.Do("GET", "/api/public/v1/help?view=list&format=csv", nil)
	// Over the limit: the limiter and the error handler log too.
	for range 5 {
		publish(t, s, req)
	}
	s.Stop() // flush

	log, out := s.Log(), s.Output()
	checkPublicationLines(t, log)
	if strings.Count(log, "\n") < 10 || !strings.Contains(log, `"level":"debug"`) || !strings.Contains(out+log, "handled request") {
		t.Fatalf("the test sees no DEBUG or access log; it would prove nothing:\n%.2000s\n%.2000s", log, out)
	}
	for _, where := range []struct{ name, text string }{{"caddy.log", log}, {"process output", out}} {
		for i, line := range strings.Split(where.text, "\n") {
			for _, sec := range secrets {
				if strings.Contains(line, sec) || strings.Contains(line, strings.ReplaceAll(sec, " ", "")) {
					t.Errorf("%s line %d holds %q:\n%.600s", where.name, i+1, sec, line)
				}
			}
		}
	}
}

// checkPublicationLines checks the publication log (README: Logs): one line per outcome under the logger
// directaid.publication, with the fields of the README's table, for every channel.
func checkPublicationLines(t *testing.T, log string) {
	t.Helper()
	seen, faithful := map[string]int{}, 0
	for _, line := range strings.Split(log, "\n") {
		if !strings.Contains(line, `"logger":"directaid.publication"`) {
			continue
		}
		var l map[string]any
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			t.Fatalf("publication line is not JSON: %v\n%s", err, line)
		}
		if l["msg"] != "publication" || l["channel"] == nil || l["outcome"] == nil || l["status"] == nil {
			t.Errorf("publication line lacks a field: %s", line)
		}
		switch l["outcome"] {
		case "created", "duplicate":
			if l["id"] == nil || l["type"] == nil || l["emergency"] == nil {
				t.Errorf("accepted publication line lacks id, type or emergency: %s", line)
			}
			// A faithful retry is a DEBUG line; one whose content differs, and a creation, INFO.
			want := "info"
			if l["outcome"] == "duplicate" && l["content_matches"] == true {
				want = "debug"
				faithful++
			}
			if l["level"] != want {
				t.Errorf("publication line at %v, want %s: %s", l["level"], want, line)
			}
		case "refused":
			if l["code"] == nil {
				t.Errorf("refused publication line lacks code: %s", line)
			}
		}
		seen[fmt.Sprint(l["channel"], " ", l["outcome"], " ", l["code"])]++
	}
	for _, want := range []string{"api created <nil>", "api duplicate <nil>", "api refused consent_required", "api refused invalid_body",
		"api refused invalid_json", "api refused rate_limited", "form created <nil>", "form refused consent_required", "mcp created <nil>", "mcp refused invalid_body"} {
		if seen[want] == 0 {
			t.Errorf("no publication line %q; lines: %v", want, seen)
		}
	}
	if faithful == 0 {
		t.Error("no line of a faithful retry: the test checks its level on nothing")
	}
}
