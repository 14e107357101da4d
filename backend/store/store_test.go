package store

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

func TestFoldText(t *testing.T) {
	for in, want := range map[string]string{
		"Médico  ÚTILES\nNiño": "medico utiles nino", " Ñandú ": "nandu", "ÅÆÇ ß\u00a0x\u0085": "aæc ß x",
		"Niño\u0301 Ñu": "nino nu", "naïve café\u2028ŒUVRE": "naive cafe œuvre", "\xc3": "\ufffd", "a\xc3(": "a\ufffd(",
	} {
		if got := FoldText(in); got != want {
			t.Errorf("FoldText(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestFoldTextAsUnicode checks FoldText's table against the decomposition it stands for: every rune below
// U+0180 in every position of texts with runs of spaces, and random texts of them and a few others.
// TestQueryWords: a search's words less their plural ending and then, a plural, their final o or a, so
// that each, a substring, finds the singular and the plural, the masculine and the feminine; a singular,
// short words and words with other characters as typed.
func TestQueryWords(t *testing.T) {
	for q, want := range map[string]string{
		"Personas atrapadas":  "person atrapad",
		"atrapados":           "atrapad",
		"carrotanques":        "carrotanque",
		"CAMIONES de agua":    "camion de agua",
		"mujeres":             "mujer",
		"niños casas aguas":   "nino casa agua",
		"insulina medico":     "insulina medico",
		"medicamentos 12 s/n": "medicament 12 s/n",
		"gas mas bus pies":    "gas mas bus pies",
	} {
		if got := strings.Join(QueryWords(q), " "); got != want {
			t.Errorf("QueryWords(%q) = %q, want %q", q, got, want)
		}
		for i, w := range QueryWords(q) {
			if typed := strings.Fields(FoldText(q))[i]; !strings.HasPrefix(typed, w) {
				t.Errorf("QueryWords(%q): %q does not begin %q", q, w, typed)
			}
		}
	}
	// A plural finds every form of its word.
	for _, text := range []string{"persona atrapada", "personas atrapadas", "persona atrapado", "animales atrapados"} {
		if !MatchText(text, QueryWords("personas atrapados")[1:]) || !MatchText(FoldText(text), QueryWords("atrapadas")) {
			t.Errorf("%q is not found by its other forms", text)
		}
	}
}

func TestFoldTextAsUnicode(t *testing.T) {
	check := func(s string) {
		t.Helper()
		if got, want := FoldText(s), foldUnicode(s); got != want {
			t.Fatalf("FoldText(%q) = %q, the decomposition gives %q", s, got, want)
		}
	}
	for r := range rune(0x180) {
		for _, f := range []string{"%c", " %c", "%c ", "a%cb", "A \t%c\n B", "%c%c", "%c\u0301"} {
			check(strings.ReplaceAll(f, "%c", string(r)))
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	extra := []rune{0x301, 0x2028, 0x3000, 0x130, 0x1e9e, 0xfb01, 0xfffd}
	for range 20000 {
		var sb strings.Builder
		for range rng.IntN(12) {
			if rng.IntN(8) == 0 {
				sb.WriteRune(extra[rng.IntN(len(extra))])
			} else {
				sb.WriteRune(rune(rng.IntN(0x100)))
			}
		}
		check(sb.String())
	}
}

// FuzzFoldText checks FoldText against the decomposition on any input, invalid UTF-8 included.
func FuzzFoldText(f *testing.F) {
	for _, s := range []string{"Médico  ÚTILES\nNiño", " Ñandú ", "\xc3", "e\u0301", "İstanbul", "\u00a0x\u0085y"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := FoldText(s), foldUnicode(s); got != want {
			t.Fatalf("FoldText(%q) = %q, the decomposition gives %q", s, got, want)
		}
	})
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

// BenchmarkFoldText folds a publication's title and description, Spanish with accents (the table) and
// the same through the decomposition (foldUnicode).
func BenchmarkFoldText(b *testing.B) {
	text := "Necesitamos agua potable y pañales para niños en el albergue\nSomos 40 familias en el coliseo del barrio San José; " +
		"hay adultos mayores y una señora con diabetes que necesita insulina. Llamar después de las 6 p.m."
	for _, c := range []struct {
		name string
		fold func(string) string
	}{{"table", FoldText}, {"decomposition", foldUnicode}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = c.fold(text)
			}
		})
	}
}
