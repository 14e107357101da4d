package textdist

import "testing"

func TestDistance(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{{"", "", 0}, {"publish", "publsh", 1}, {"el kaimo", "el caimo", 1}, {"pereria", "pereira", 1}, {"ca", "ac", 1}, {"abcdef", "badcfe", 3}, {"abc", "", 3}, {"", "ab", 2}, {"armenia", "armenia", 0}} {
		if got := Distance(c.a, c.b); got != c.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
		if got := Distance(c.b, c.a); got != c.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", c.b, c.a, got, c.want)
		}
	}
}
