package e2e

import (
	"os"
	"testing"

	"github.com/directaid/directaid/internal/pgtest"
)

// TestMain stops the PostgreSQL cluster that the PostgreSQL tests share (pgtest.Shared), if one started.
func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
