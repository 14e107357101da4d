package badgerstore

import (
	"testing"

	"github.com/dgraph-io/badger/v4"

	"github.com/directaid/directaid/backend/store"
)

// recordedCells records the cells RadiusTotal asks the counters for, call by call.
type recordedCells struct {
	*cellCounter
	calls [][]string
}

func (r *recordedCells) CellCounts(cells []string) ([]store.CellCount, error) {
	r.calls = append(r.calls, cells)
	return r.cellCounter.CellCounts(cells)
}

// BenchmarkUniformCellCounts is the counter read of a 5 km radius total alone: the cells that 200 random
// circles' RadiusTotal asks for (BenchmarkUniformRadius5km's points), read again through CellCounts; an
// op is one circle's.
//
//	BENCH_READONLY=1 BENCH_UNIFORM=100000 go test ./backend/badgerstore -run '^$' -bench UniformCellCounts -benchmem -benchtime 4000x
func BenchmarkUniformCellCounts(b *testing.B) {
	s, n := uniformDB(b)
	const circles = 200
	calls := make([][][]string, circles)
	asked := 0
	err := s.view(func(txn *badger.Txn) error {
		cells, err := s.cells.viewAt(txn)
		if err != nil {
			return err
		}
		for i := range circles {
			lat, lon := uniformPoint(n, i)
			spec := &store.ListSpec{Near: true, Lat: lat, Lon: lon, RadiusKm: 5, Limit: 20}
			r := &recordedCells{cellCounter: &cellCounter{cells, txn, spec, newFilter(spec)}}
			if _, _, err := store.RadiusTotal(spec, r); err != nil {
				return err
			}
			calls[i] = r.calls
			for _, c := range r.calls {
				asked += len(c)
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	err = s.view(func(txn *badger.Txn) error {
		cells, err := s.cells.viewAt(txn)
		if err != nil {
			return err
		}
		spec := &store.ListSpec{Near: true, Limit: 20}
		c := &cellCounter{cells, txn, spec, newFilter(spec)}
		for i := range b.N {
			for _, cells := range calls[i%circles] {
				if _, err := c.CellCounts(cells); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(asked)/circles, "cells/op")
}
