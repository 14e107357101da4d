// Package erasescan looks for byte strings in every file of a Badger directory: the raw bytes of each
// file (write-ahead logs, value logs, manifest) and, for SST tables, whose blocks are compressed, every
// key and value of every version they hold. The erasure tests use it to prove that erased data left the
// files.
package erasescan

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/dgraph-io/badger/v4/options"
	"github.com/dgraph-io/badger/v4/table"
	"github.com/dgraph-io/ristretto/v2/z"
)

// Find returns, for each needle found, where ("file" or "file: key"). Files deleted while it scans are
// skipped: a live database unlinks tables as it compacts.
func Find(dir string, needles ...[]byte) ([]string, error) {
	var found []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		for _, n := range needles {
			if bytes.Contains(b, n) {
				found = append(found, fmt.Sprintf("%q in %s", n, path))
			}
		}
		if strings.HasSuffix(path, ".sst") {
			f, err := scanTable(path, needles)
			if err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("%s: %w", path, err)
			}
			found = append(found, f...)
		}
		return nil
	})
	return found, err
}

// scanTable decodes every entry of an SST (Badger's default block size and Snappy compression).
func scanTable(path string, needles [][]byte) ([]string, error) {
	mf, err := z.OpenMmapFile(path, os.O_RDONLY, 0)
	if err != nil && !errors.Is(err, z.NewFile) {
		return nil, err
	}
	t, err := table.OpenTable(mf, table.Options{ReadOnly: true, BlockSize: 4 << 10, Compression: options.Snappy,
		ChkMode: options.NoVerification, BloomFalsePositive: 0.01})
	if err != nil {
		_ = mf.Close(-1)
		return nil, err
	}
	// Never DecrRef: at zero references a Table deletes its file. Unmap it instead.
	defer mf.Close(-1)
	it := t.NewIterator(table.NOCACHE)
	defer it.Close()
	var found []string
	for it.Rewind(); it.Valid(); it.Next() {
		k, v := it.Key(), it.Value().Value
		for _, n := range needles {
			if bytes.Contains(k, n) || bytes.Contains(v, n) {
				found = append(found, fmt.Sprintf("%q in %s (entry %q)", n, path, k[:min(len(k), 24)]))
			}
		}
	}
	return found, nil
}
