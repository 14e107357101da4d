package e2e

import (
	"os"

	"github.com/directaid/directaid/internal/testmcp"
	"github.com/directaid/directaid/internal/testserver"
)

// The contract helpers, shared with the in-process tests of backend.
var (
	validRequest = testserver.ValidRequest
	validOffer   = testserver.ValidOffer
	with         = testserver.With
	mustJSON     = testserver.MustJSON
	call         = testserver.Call
	publish      = testserver.Publish
	fields       = testserver.ErrorFields
	sdkSession   = testmcp.Session
	callTool     = testmcp.CallTool
	toolText     = testmcp.Text
	toolError    = testmcp.Error
)

func readFile(path string) (string, error) {
	b, err := os.ReadFile(path)
	return string(b), err
}
