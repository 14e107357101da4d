package places

import (
	"slices"
	"strings"
	"testing"
)

func TestSearchIgnoresAccentsAndCase(t *testing.T) {
	for _, c := range []struct{ q, code, label string }{
		{"armenia", "63001", "Armenia (Quindío)"}, // the capital, not Armenia (Antioquia), comes first: see below
		{"san jose del guaviare", "95001", "San José del Guaviare (Guaviare)"},
		{"SAN JOSÉ DEL GUAVIARE", "95001", "San José del Guaviare (Guaviare)"},
		{"narino", "05483", "Nariño (Antioquia)"}, // a municipio Nariño; the departamento is no result
		{"pasto narino", "52001", "Pasto (Nariño)"},
		{"bogota", "11001", "Bogotá, D.C."},
		{"el caimo armenia", "63001001", "El Caimo, Armenia (Quindío)"},
		// As people say it: a final «ado» said «ao», alone, with its municipio, or half typed.
		{"pueblo tapao", "63470003", "Pueblo Tapado, Montenegro (Quindío)"},
		{"Pueblo Tapao Montenegro", "63470003", "Pueblo Tapado, Montenegro (Quindío)"},
		{"pueblo tapad", "63470003", "Pueblo Tapado, Montenegro (Quindío)"},
		// With the words people put before a name.
		{"vereda el caimo", "63001001", "El Caimo, Armenia (Quindío)"},
		{"cerca de armenia", "63001", "Armenia (Quindío)"},
		{"Municipio de Salento", "63690", "Salento (Quindío)"},
		{"corregimiento pueblo tapao", "63470003", "Pueblo Tapado, Montenegro (Quindío)"},
		{"vda el caimo", "63001001", "El Caimo, Armenia (Quindío)"},
		// Written in two words: the municipio first, before the villages of that name elsewhere.
		{"dos quebradas", "66170", "Dosquebradas (Risaralda)"},
		{"villa maria", "17873", "Villamaría (Caldas)"},
	} {
		got := Search(c.q, 10)
		if len(got) == 0 {
			t.Errorf("Search(%q): nothing", c.q)
			continue
		}
		found := false
		for _, p := range got {
			if p.Code == c.code {
				found = true
				if Label(p) != c.label {
					t.Errorf("Label(%s) = %q, want %q", p.Code, Label(p), c.label)
				}
			}
		}
		if !found {
			t.Errorf("Search(%q) = %v, want %s among them", c.q, got, c.code)
		}
	}
}

// TestSearchTwoWordsNameTheMunicipioFirst: «dos quebradas» and «villa maria», as people write
// Dosquebradas and Villamaría, list the municipio first, before the villages of that name elsewhere.
func TestSearchTwoWordsNameTheMunicipioFirst(t *testing.T) {
	for q, code := range map[string]string{"dos quebradas": "66170", "villa maria": "17873", "Villa María": "17873"} {
		if got := Search(q, 5); len(got) == 0 || got[0].Code != code {
			t.Errorf("Search(%q) = %v, want %s first", q, got, code)
		}
	}
}

func TestSearchRanksExactMunicipiosFirst(t *testing.T) {
	got := Search("armenia", 10)
	// Two municipios are called Armenia (Antioquia 05059, Quindío 63001); both come before the centros
	// poblados called Armenia and before «Armenia - Camparrusia».
	if len(got) < 3 || got[0].Kind() != Municipio || got[1].Kind() != Municipio {
		t.Fatalf("Search(armenia) = %v", got)
	}
	codes := got[0].Code + got[1].Code
	if !strings.Contains(codes, "05059") || !strings.Contains(codes, "63001") {
		t.Errorf("the two municipios Armenia first, got %v", got[:2])
	}
	for _, p := range got[2:] {
		if Fold(p.Name) == "armenia" && p.Kind() == Municipio {
			t.Errorf("a third municipio Armenia: %v", p)
		}
	}
	if got := Search("   ", 5); got != nil {
		t.Errorf("blank query: %v", got)
	}
	if got := Search("zzzqqq", 5); len(got) != 0 {
		t.Errorf("nonsense query: %v", got)
	}
}

func TestLookupAndHierarchy(t *testing.T) {
	p, ok := Lookup("63001")
	if !ok || p.Name != "Armenia" || p.Lat < 4.5 || p.Lat > 4.6 || p.Lon > -75.6 || p.Lon < -75.7 {
		t.Fatalf("Lookup(63001) = %+v, %v", p, ok)
	}
	if c, ok := Lookup("63001000"); !ok || c.Code != "63001" {
		t.Errorf("a cabecera's code is its municipio: %+v %v", c, ok)
	}
	if _, ok := Lookup("99999"); ok {
		t.Error("Lookup(99999) found something")
	}
	if n := len(Departamentos()); n != 33 {
		t.Errorf("%d departamentos, want 33", n)
	}
	ms := Children("63")
	if len(ms) != 12 || ms[0].Name != "Armenia" {
		t.Errorf("Quindío has 12 municipios, Armenia first by name: %v", ms)
	}
	for _, c := range Children("63001") {
		if c.Kind() != CentroPoblado || c.MunicipioCode() != "63001" || c.Lat == 0 {
			t.Errorf("child of Armenia: %+v", c)
		}
	}
	// Every place is the child of its departamento or municipio, and of nothing else; a caller may
	// change its copy.
	kids := 0
	for _, p := range load().all {
		for _, parent := range []string{p.Code, p.Code[:2], p.Code[:min(5, len(p.Code))]} {
			in := slices.ContainsFunc(Children(parent), func(c Place) bool { return c.Code == p.Code })
			want := parent != p.Code && len(parent) == len(p.Code)-3
			if len(p.Code) == 5 && parent == p.Code[:2] {
				want = true
			}
			if in != want {
				t.Errorf("%s in Children(%s): %v, want %v", p.Code, parent, in, want)
			}
		}
		kids += len(Children(p.Code))
	}
	if kids != len(load().all)-33 {
		t.Errorf("%d places are children, want every municipio and centro poblado (%d)", kids, len(load().all)-33)
	}
	Children("63")[0].Name = "cambiado"
	if Children("63")[0].Name != "Armenia" {
		t.Error("a caller's change to Children reached the list")
	}
	// Every municipio and centro poblado has a point in Colombia (the API's bounds).
	n := 0
	for _, p := range load().all {
		if p.Kind() == Departamento {
			continue
		}
		n++
		if p.Lat < -4.3 || p.Lat > 13.6 || p.Lon < -82 || p.Lon > -66.8 {
			t.Errorf("%s %s out of Colombia: %v,%v", p.Code, p.Name, p.Lat, p.Lon)
		}
	}
	if n < 7700 {
		t.Errorf("%d places, want all of DIVIPOLA's", n)
	}
}

func TestFold(t *testing.T) {
	for in, want := range map[string]string{"Bogotá, D.C.": "bogota d c", "  NARIÑO ": "narino", "Güepsa": "guepsa"} {
		if got := Fold(in); got != want {
			t.Errorf("Fold(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestNearest(t *testing.T) {
	for _, c := range []struct {
		lat, lon  float64
		municipio string
	}{
		{4.5339, -75.6811, "63001"}, // central Armenia
		{4.800, -75.725, "66001"},   // Pereira
		{12.58, -81.70, "88001"},    // San Andrés, outside the typed longitude bounds
	} {
		if got := Nearest(c.lat, c.lon).MunicipioCode(); got != c.municipio {
			t.Errorf("Nearest(%v, %v) is in %s, want %s", c.lat, c.lon, got, c.municipio)
		}
	}
}

func TestMunicipios(t *testing.T) {
	for q, want := range map[string]string{
		"63001": "63001", "armenia": "05059 63001", "Armenia Quindío": "63001", "armenia quin": "63001",
		"san andres archipielago": "88001", "SAN ANDRÉS": "68669 88001", "63001001": "", "63": "", "armeni": "", "": "",
	} {
		var got []string
		for _, p := range Municipios(q) {
			got = append(got, p.Code)
		}
		if strings.Join(got, " ") != want {
			t.Errorf("Municipios(%q) = %v, want %s", q, got, want)
		}
	}
}

// TestMunicipioOf: a point takes the municipio of its nearest listed place, every place's own point its
// own municipio, and a point abroad, farther than MaxMunicipioKm from every place, none.
func TestMunicipioOf(t *testing.T) {
	for _, p := range load().all {
		if len(p.Code) == 2 || (p.Lat == 0 && p.Lon == 0) {
			continue
		}
		if got := MunicipioOf(p.Lat, p.Lon); got != Nearest(p.Lat, p.Lon).MunicipioCode() {
			t.Fatalf("%s %s: MunicipioOf %q, Nearest's %q", p.Code, p.Name, got, Nearest(p.Lat, p.Lon).MunicipioCode())
		}
	}
	for _, c := range []struct {
		name     string
		lat, lon float64
		want     string
	}{
		{"Armenia", 4.5339, -75.6811, "63001"},
		{"Caracas", 10.5, -66.9, ""},
		{"the Peru–Ecuador border", -4.2, -79.0, ""},
		{"Panamá City", 8.98, -79.52, ""},
	} {
		if got := MunicipioOf(c.lat, c.lon); got != c.want {
			t.Errorf("%s (%v, %v): %q, want %q", c.name, c.lat, c.lon, got, c.want)
		}
	}
}

// TestNamedBy: a typed name names a place as Search compares them, alone or followed by its municipio.
func TestNamedBy(t *testing.T) {
	p, _ := Lookup("63470003") // Pueblo Tapado, Montenegro
	for typed, want := range map[string]bool{"Pueblo Tapado": true, "pueblo tapao": true, "PUEBLO TAPAO montenegro": true,
		"pueblo": false, "pueblo tapados": false, "tapao": false} {
		if got := NamedBy(p, typed); got != want {
			t.Errorf("NamedBy(%s, %q) = %v, want %v", p.Name, typed, got, want)
		}
	}
}

// TestMunicipiosByShortName: the names people say of municipios whose official name is longer find them,
// only when no municipio has that name: «cali» is Santiago de Cali, «bogota» Bogotá, D.C.; «bolivar» stays
// the municipios named Bolívar (not El Carmen de Bolívar).
func TestMunicipiosByShortName(t *testing.T) {
	for typed, want := range map[string]string{"cali": "76001", "Bogotá": "11001", "bogota": "11001", "buga": "76111",
		"cucuta": "54001", "cartagena": "13001", "cali valle": "76001", "santiago de cali": "76001"} {
		if ms := Municipios(typed); len(ms) != 1 || ms[0].Code != want {
			t.Errorf("Municipios(%q) = %v, want %s", typed, ms, want)
		}
	}
	for _, m := range Municipios("bolivar") {
		if !strings.HasPrefix(Fold(m.Name), "bolivar") {
			t.Errorf("Municipios(bolivar) holds %s", m.Name)
		}
	}
}

// TestMunicipiosInArea: with an emergency's area, the municipios of the area that a name means come
// before any other, even by a shorter name or other spaces; without one, the name's own municipios.
func TestMunicipiosInArea(t *testing.T) {
	eje := []string{"63", "66", "17"}
	codes := func(ms []Place) []string {
		var out []string
		for _, m := range ms {
			out = append(out, m.Code)
		}
		return out
	}
	for _, tc := range []struct {
		typed string
		area  []string
		want  []string
	}{
		{"santa rosa", eje, []string{"66682"}},                           // Santa Rosa de Cabal, as people say it there
		{"santa rosa", nil, []string{"13683", "19701"}},                  // the two named so
		{"Santa Rosa", []string{"13"}, []string{"13683"}},                // the one of the area
		{"villa maria", eje, []string{"17873"}},                          // Villamaría, written in two words
		{"villa maria", nil, []string{"17873"}},                          // no municipio is named «Villa María»
		{"armenia", eje, []string{"63001"}},                              // not Armenia (Antioquia)
		{"armenia", nil, []string{"05059", "63001"}},                     // both
		{"bolivar", []string{"13"}, []string{"19100", "68101", "76100"}}, // not El Carmen de Bolívar: a departamento's name is no alias
		{"antioquia", nil, nil},                                          // nor of Santa Fe de Antioquia
		{"pereira", []string{"70"}, []string{"66001"}},                   // none in the area: the name's own
		{"tebaida", nil, []string{"63401"}},                              // La Tebaida, without its article
	} {
		if got := codes(Municipios(tc.typed, tc.area...)); !slices.Equal(got, tc.want) {
			t.Errorf("Municipios(%q, %v) = %v, want %v", tc.typed, tc.area, got, tc.want)
		}
	}
}

// TestVillagesNamed: a village by its name as typed (accents, article, «ao» aside), alone or followed by
// its municipio's name, and not followed by any other word.
func TestVillagesNamed(t *testing.T) {
	for q, want := range map[string][]string{
		"el caimo": {"63001001"}, "El Caimo Armenia": {"63001001"}, "caimo": {"63001001"}, "pueblo tapao": {"63470003"},
		"el caimo insulina": nil, "armenia": nil,
	} {
		var got []string
		for _, p := range VillagesNamed(q) {
			if InArea(p.Code, []string{"63"}) {
				got = append(got, p.Code)
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("VillagesNamed(%q) in Quindío = %v, want %v", q, got, want)
		}
	}
}

// TestMunicipiosBeginning: a name cut short names the municipios that begin so (a leading article and
// spaces aside), the area's first; nothing else of the name's departamento or villages.
func TestMunicipiosBeginning(t *testing.T) {
	names := func(ps []Place) []string {
		var out []string
		for _, p := range ps {
			out = append(out, Label(p))
		}
		return out
	}
	for _, c := range []struct {
		typed string
		area  []string
		want  []string
	}{
		{"armeni", nil, []string{"Armenia (Antioquia)", "Armenia (Quindío)"}},
		{"armeni", []string{"63"}, []string{"Armenia (Quindío)", "Armenia (Antioquia)"}},
		{"villa ma", []string{"17"}, []string{"Villamaría (Caldas)"}},
		{"VILLA MA", nil, []string{"Villamaría (Caldas)"}},
		{"tebai", nil, []string{"La Tebaida (Quindío)"}},
		{"la ce", nil, []string{"La Ceja (Antioquia)", "La Celia (Risaralda)"}},
		{"zzz", nil, nil},
		{" ", nil, nil},
	} {
		if got := names(MunicipiosBeginning(c.typed, 3, c.area...)); !slices.Equal(got, c.want) {
			t.Errorf("MunicipiosBeginning(%q, %v) = %q, want %q", c.typed, c.area, got, c.want)
		}
	}
}

// TestNamesLike: a town's name with a typo names the town (those of the area first); a name of fewer than
// four letters, or far from every name, none.
func TestNamesLike(t *testing.T) {
	eje := []string{"63", "66", "17"}
	for _, c := range []struct {
		typed string
		area  []string
		want  string // the first's label
	}{
		{"pereria", eje, "Pereira (Risaralda)"},
		{"el kaimo", eje, "El Caimo, Armenia (Quindío)"},
		{"vereda el kaimo", eje, "El Caimo, Armenia (Quindío)"}, // the words before a name left out
		{"cerca de montenegor", eje, "Montenegro (Quindío)"},
		{"kaimo", eje, "El Caimo, Armenia (Quindío)"},
		{"calarka", eje, "Calarcá (Quindío)"},
		{"manisales", eje, "Manizales (Caldas)"},
		{"xyzzy", eje, ""},
		{"ab", eje, ""},
	} {
		first := ""
		if got := NamesLike(c.typed, 3, c.area...); len(got) > 0 {
			first = Label(got[0])
		}
		if first != c.want {
			t.Errorf("NamesLike(%q) begins %q, want %q", c.typed, first, c.want)
		}
	}
}
