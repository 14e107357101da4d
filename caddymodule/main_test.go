package caddymodule

import (
	"os"
	"testing"

	"github.com/directaid/directaid/internal/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
