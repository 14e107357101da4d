package backend_test

import (
	"testing"

	"github.com/directaid/directaid/internal/testserver"
)

// A retry that writes the publisher's number another way is the same content: 200 with contentMatches
// true and the manage token, as the first answer gave it.
func TestRetryWithThePhoneWrittenAnotherWay(t *testing.T) {
	s := newContractServer(t)
	pub := testserver.ValidRequest()
	pub["contactWhatsapp"] = "300 123 4567"
	resp, first := s.publish(string(testserver.MustJSON(t, pub)))
	if resp.StatusCode != 201 {
		t.Fatalf("publish: %d %v", resp.StatusCode, first)
	}
	pub["contactWhatsapp"] = "+57 3001234567"
	resp, again := s.publish(string(testserver.MustJSON(t, pub)))
	if resp.StatusCode != 200 || again["contentMatches"] != true || again["manageToken"] != first["manageToken"] || again["id"] != first["id"] {
		t.Fatalf("retry with the number written another way: %d %v", resp.StatusCode, again)
	}
	pub["contactWhatsapp"] = "300 123 4568"
	if resp, other := s.publish(string(testserver.MustJSON(t, pub))); resp.StatusCode != 200 || other["contentMatches"] != false || other["manageToken"] != nil {
		t.Fatalf("retry with another number: %d %v", resp.StatusCode, other)
	}
}
