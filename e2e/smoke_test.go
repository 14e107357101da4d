package e2e

import (
	"testing"

	"github.com/directaid/directaid/internal/testserver"
)

func TestSmoke(t *testing.T) {
	t.Parallel()
	s := testserver.Start(t, testserver.Options{})
	req := s.NewRequest("GET", "/api/public/v1/help", nil)
	resp, body := s.Do("GET", "/api/public/v1/help", nil)
	if resp.StatusCode != 200 {
		t.Fatal(resp.StatusCode)
	}
	s.CheckOpenAPI(req, resp, body)
	if err := s.ValidateDocument(); err != nil {
		t.Fatal(err)
	}
}
