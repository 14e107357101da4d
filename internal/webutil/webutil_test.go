package webutil

import (
	"net/http/httptest"
	"testing"
)

func TestBaseURL(t *testing.T) {
	for host, ok := range map[string]bool{
		"ayuda.example.org": true, "127.0.0.1:8080": true, "[::1]:443": true, "localhost": true,
		"evil'host": false, "a b": false, "": false, "x/y": false, "a(b)": false, "ayuda.example.org:99999999": false,
	} {
		r := httptest.NewRequest("GET", "/", nil)
		r.Host = host
		if base, got := BaseURL("", r); got != ok || base != "http://"+host {
			t.Errorf("Host %q: %q, %v; want ok=%v", host, base, got, ok)
		}
		if base, got := BaseURL("https://ayuda.example.org/", r); !got || base != "https://ayuda.example.org" {
			t.Errorf("with public URL, Host %q: %q, %v", host, base, got)
		}
	}
}

func TestETag(t *testing.T) {
	a, b := ETag([]byte("a")), ETag([]byte("b"))
	if a == b || len(a) != 18 || a[0] != '"' || a[len(a)-1] != '"' {
		t.Fatalf("ETag: %s %s", a, b)
	}
	for header, want := range map[string]bool{a: true, "W/" + a: true, "*": true, b + ", " + a: true, b: false, "": false, a[1:]: false} {
		if got := ETagMatches(header, a); got != want {
			t.Errorf("If-None-Match %q: %v", header, got)
		}
	}
}

func TestAcceptQ(t *testing.T) {
	json := func(mt string) bool { return mt == "application/json" }
	for _, c := range []struct {
		accept string
		want   float64
	}{
		{"", 0},
		{"text/html", 0},
		{"application/json", 1},
		{"text/html, application/json;q=0.5, application/json;q=0.8", 0.8},
		{"application/json;q=bad, text/html", 0},
		{"garbage;;, application/json;q=0.3", 0.3},
	} {
		if got := AcceptQ(c.accept, json); got != c.want {
			t.Errorf("AcceptQ(%q) = %g, want %g", c.accept, got, c.want)
		}
	}
}
