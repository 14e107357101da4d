package caddymodule

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/directaid/directaid/backend/store"
)

func init() { verifyBackupFile = verifyBackup }

// verifyDatabase checks a directory of the embedded store that nothing has open (store.Verification).
func verifyDatabase(dir string) (*store.Verification, error) {
	d, err := store.Embedded()
	if err != nil {
		return nil, err
	}
	if d.Verify == nil {
		return nil, errors.New(d.Title + " keeps itself consistent: there is nothing to verify")
	}
	return d.Verify(dir)
}

// verifyBackup restores the backup at path into a temporary directory (checking its checksums), checks
// it (every record counted by status, every index entry and aggregate against the records), prints a
// summary to report, removes the directory, and returns an error on any mismatch.
func verifyBackup(path string, report io.Writer) error {
	tmp, err := os.MkdirTemp("", "directaid-verify-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	dir := filepath.Join(tmp, "db")
	checked, err := restoreDatabase(dir, f)
	if err != nil {
		return fmt.Errorf("restore %s: %w", path, err)
	}
	fmt.Fprintf(report, "%s: %s\n", path, checked)
	return printVerification(report, path, dir)
}

// printVerification verifies dir and prints what it found; the error says whether it is consistent.
func printVerification(report io.Writer, what, dir string) error {
	v, err := verifyDatabase(dir)
	if err != nil {
		return fmt.Errorf("verify %s: %w", what, err)
	}
	return printFound(report, what, v)
}

// printFound prints what a verification of what found; the error says whether it is consistent.
func printFound(report io.Writer, what string, v *store.Verification) error {
	total := 0
	for _, n := range v.Records {
		total += n
	}
	fmt.Fprintf(report, "%s: %d records", what, total)
	for _, status := range slices.Sorted(func(yield func(string) bool) {
		for s := range v.Records {
			if !yield(s) {
				return
			}
		}
	}) {
		fmt.Fprintf(report, ", %s %d", status, v.Records[status])
	}
	fmt.Fprintf(report, "; %d index entries and aggregates checked against them\n", v.Checked)
	if len(v.Problems) == 0 {
		fmt.Fprintln(report, "consistent: every index and aggregate agrees with the records")
		return nil
	}
	for _, p := range v.Problems {
		fmt.Fprintln(report, "MISMATCH:", p)
	}
	return errors.New("the database is not consistent: see the mismatches above; 'directaid verify --database <dir> --repair', with the server stopped, mends it")
}
