package e2e

import (
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/directaid/directaid/internal/testserver"
)

// TestStatusPage publishes a few records and reads the operator's page on the admin endpoint: the figures
// are there, the chart is an inline SVG with one bar per minute of the last hour, and nothing is fetched.
func TestStatusPage(t *testing.T) {
	t.Parallel()
	s := testserver.Start(t, testserver.Options{})
	publish(t, s, validRequest())
	publish(t, s, validOffer())
	publish(t, s, with(validRequest(), "publishContact", false)) // refused: consent_required

	resp, err := http.Get(s.AdminURL + "/directaid/status")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	page := string(raw)
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("GET /directaid/status: %d %s\n%.500s", resp.StatusCode, resp.Header.Get("Content-Type"), page)
	}
	for _, want := range []string{
		"Total en la hora: 3 (creadas 2, duplicadas 0, rechazadas 1)",
		"<td>consent_required</td><td>1</td>",
		// Open requests, open offers, then each status (open first), then the report breakers.
		"<td>eje-cafetero</td><td>1</td><td>1</td><td>2</td>",
		"<td>activo</td>",
		"<td>wal</td>", "<td>libre</td>",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if n := strings.Count(page, "<svg"); n != 1 {
		t.Errorf("%d <svg> elements, want 1", n)
	}
	if n := strings.Count(page, `<g class="minuto">`); n != 60 {
		t.Errorf("%d bars, want one per minute of the hour (60)", n)
	}
	// The bars of these minutes (the three publications may straddle a minute): the two created and, in
	// red above them, the one refused (a refusal is no publication: on a full disk the bars showed every
	// refused attempt as activity).
	created, refused := 0, 0
	for _, m := range regexp.MustCompile(`<title>\d\d:\d\d UTC: creadas (\d+), rechazadas (\d+)</title><rect [^>]*fill="#2a6"></rect>(<rect [^>]*fill="#c33"></rect>)?`).FindAllStringSubmatch(page, -1) {
		c, _ := strconv.Atoi(m[1])
		r, _ := strconv.Atoi(m[2])
		if (r > 0) != (m[3] != "") {
			t.Errorf("a bar's red part does not follow its refusals: %s", m[0])
		}
		created, refused = created+c, refused+r
	}
	if created != 2 || refused != 1 {
		t.Errorf("the bars say %d created and %d refused, want 2 and 1:\n%s", created, refused, page)
	}
	if regexp.MustCompile(`https?://|<script|src=`).MatchString(page) {
		t.Errorf("the page references an external asset or a script:\n%s", page)
	}
	if r, _ := http.Post(s.AdminURL+"/directaid/status", "text/plain", nil); r != nil {
		r.Body.Close()
		if r.StatusCode != http.StatusMethodNotAllowed {
			t.Errorf("POST /directaid/status: %d, want 405", r.StatusCode)
		}
	}
}
