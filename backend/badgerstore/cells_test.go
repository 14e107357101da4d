package badgerstore

import (
	"errors"
	"testing"
)

// TestCreateNeedsEmergency: a record without an emergency slug is refused with errNoEmergency and writes
// nothing; before, it was stored and counted twice in every cell counter of scope "".
func TestCreateNeedsEmergency(t *testing.T) {
	dir := t.TempDir()
	s := open(t, Options{Dir: dir})
	rec := records("sin-emergencia", 1)[0]
	rec.EmergencySlug = ""
	if _, _, err := s.Create(t.Context(), rec); !errors.Is(err, errNoEmergency) {
		t.Fatalf("Create without an emergency slug: %v, want errNoEmergency", err)
	}
	if v := closeVerify(t, s, dir); len(v.Records) > 0 || len(v.Problems) > 0 {
		t.Fatalf("the refused record left %+v", v)
	}
}
