package store

import "context"

// Scanner is a Store that can hand over every record it holds, whatever its status, to copy it into
// another store (`directaid migrate`).
type Scanner interface {
	// Scan calls fn with each record, in id order, from one snapshot; fn's error stops the scan and is returned.
	Scan(ctx context.Context, fn func(*Record) error) error
}
