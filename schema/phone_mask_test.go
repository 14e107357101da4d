package schema

import "testing"

// TestMaskPhones: the numbers people type in a text, alone, side by side or in a link, and none of the
// other runs of digits a request holds (amounts, dates, addresses, coordinates, a cédula).
func TestMaskPhones(t *testing.T) {
	for in, want := range map[string]string{
		"Llamen al 3105556677 o +57 320 111 2233":     "Llamen al [teléfono oculto] o [teléfono oculto]",
		"Mi número es 310-555-6677, gracias":          "Mi número es [teléfono oculto], gracias",
		"https://wa.me/573105556677":                  "https://wa.me/[teléfono oculto]",
		"300 123 4567 310 987 6543":                   "[teléfono oculto] [teléfono oculto]",
		"(+57) 321-555-0199 fijo 601 234 5678.":       "[teléfono oculto] fijo [teléfono oculto].",
		"Somos 12 familias, 45 personas":              "Somos 12 familias, 45 personas",
		"Cra 14 # 20-31, apto 401":                    "Cra 14 # 20-31, apto 401",
		"Cuesta 1.500.000 pesos, desde el 2026-11-29": "Cuesta 1.500.000 pesos, desde el 2026-11-29",
		"Coordenadas 4.5339, -75.6811":                "Coordenadas 4.5339, -75.6811",
		"Cédula 1.094.567.890":                        "Cédula 1.094.567.890",
		"Llamar a las 3 pm al 3001234567.":            "Llamar a las 3 pm al [teléfono oculto].",
		"+1 202 555 0143":                             "[teléfono oculto]",
	} {
		got, _ := MaskPhones(in)
		if got != want {
			t.Errorf("%q:\n got %q\nwant %q", in, got, want)
		}
	}
}
