package schema

import (
	"net/http"
	"slices"
	"testing"
)

// Every error code has one entry with a status and a meaning, and the OpenAPI's enum is that list.
func TestErrorCodesTable(t *testing.T) {
	seen := map[string]bool{}
	for _, e := range ErrorCodes {
		if seen[e.Code] || e.Code == "" || http.StatusText(e.Status) == "" || e.Status < 400 || e.Meaning == "" {
			t.Errorf("error code %+v: repeated, or without a status or a meaning", e)
		}
		seen[e.Code] = true
	}
	code, ok := reflectSchema(&ErrorBody{}).Properties.Get("code")
	if !ok {
		t.Fatal("ErrorBody has no code")
	}
	var enum []string
	for _, v := range code.Enum {
		enum = append(enum, v.(string))
	}
	if !slices.Equal(enum, ErrorCodeNames()) {
		t.Errorf("the code's enum %v is not ErrorCodes %v", enum, ErrorCodeNames())
	}
	status, _ := reflectSchema(&PublishResult{}).Properties.Get("status")
	if len(status.Enum) != len(Statuses) {
		t.Errorf("PublishResult.status's enum %v is not Statuses", status.Enum)
	}
	listed, _ := reflectSchema(&HelpQuery{}).Properties.Get("status") // ListQuery, embedded
	if len(listed.Enum) != len(ListedStatuses) || listed.Default != StatusOpen {
		t.Errorf("HelpQuery.status's enum %v (default %v) is not ListedStatuses", listed.Enum, listed.Default)
	}
}
