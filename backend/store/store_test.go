package store

import (
	"errors"
	"testing"
	"time"
)

func TestFoldText(t *testing.T) {
	for in, want := range map[string]string{"Médico  ÚTILES\nNiño": "medico utiles nino", " Ñandú ": "nandu"} {
		if got := FoldText(in); got != want {
			t.Errorf("FoldText(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestCursorEncoding(t *testing.T) {
	spec := &ListSpec{Near: true, Lat: 4.5, Lon: -75.6, RadiusKm: 5}
	c := &Cursor{ID: NewID(time.Now()), Dist: 1.2345678901, HasDist: true}
	got, err := spec.DecodeCursor(spec.EncodeCursor(c))
	if err != nil || got.ID != c.ID || got.Dist != c.Dist {
		t.Fatal(got, err)
	}
	other := &ListSpec{Near: true, Lat: 4.5, Lon: -75.6, RadiusKm: 6}
	if _, err := other.DecodeCursor(spec.EncodeCursor(c)); !errors.Is(err, ErrCursorMismatch) {
		t.Fatal(err)
	}
	for _, bad := range []string{"", "x", "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", "!!"} {
		if _, err := spec.DecodeCursor(bad); err == nil {
			t.Fatalf("%q accepted", bad)
		}
	}
	// The encoding is part of the public contract (clients keep cursors between pages): pin it.
	fixed := &ListSpec{Category: "salud", Limit: 20}
	if got := fixed.EncodeCursor(&Cursor{ID: "01k2x3y4z5a6b7c8"}); got != "AXRxRFO2MDFrMngzeTR6NWE2YjdjOA" {
		t.Fatalf("cursor encoding changed: %s", got)
	}
	if got := spec.EncodeCursor(&Cursor{ID: "01k2x3y4z5a6b7c8", Dist: 1.25, HasDist: true}); got != "AWR8sFltMDFrMngzeTR6NWE2YjdjOD_0AAAAAAAA" {
		t.Fatalf("radius cursor encoding changed: %s", got)
	}
}

func TestIDs(t *testing.T) {
	ms := time.Now().UnixMilli()
	id := NewID(time.UnixMilli(ms))
	if !ValidID(id) || IDMillis(id) != ms || IDMillis([]byte(id)) != ms || IDMillis(FirstIDAt(ms)) != ms || FirstIDAt(ms) > id || FirstIDAt(ms+1) <= id {
		t.Fatalf("id time encoding: %s, first %s", id, FirstIDAt(ms))
	}
	for _, bad := range []string{"", "01k2x3y4z5a6b7c", "01k2x3y4z5a6b7cu", "01K2X3Y4Z5A6B7C8"} {
		if ValidID(bad) {
			t.Errorf("ValidID(%q)", bad)
		}
	}
}
