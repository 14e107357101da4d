package e2e

import (
	"strings"
	"testing"

	"github.com/directaid/directaid/internal/golden"
	"github.com/directaid/directaid/internal/testserver"
)

// TestGolden: the binary's answers, pages and documents for a fixed set of records are those kept in
// testdata/golden (see internal/golden; -update rewrites them). backend's TestGoldenInProcess compares
// backend.NewHandler's answers with the same files.
func TestGolden(t *testing.T) {
	t.Parallel()
	s := testserver.Start(t, testserver.Options{})
	golden.Run(t, "testdata/golden", strings.TrimPrefix(s.URL, "http://"), s.Do)
}
