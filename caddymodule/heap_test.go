package caddymodule

import (
	"math"
	"runtime/debug"
	"testing"

	"github.com/directaid/directaid/backend/badgerstore"
)

func TestHeapLimit(t *testing.T) {
	const MiB = 1 << 20
	for _, c := range []struct {
		target, ceiling, lasting, want int64
	}{
		{270 * MiB, math.MaxInt64, 0, 270 * MiB},                 // nothing sampled yet
		{270 * MiB, math.MaxInt64, 100 * MiB, 270 * MiB},         // a lasting heap well under half the target
		{270 * MiB, math.MaxInt64, 135 * MiB, 270 * MiB},         // exactly half
		{270 * MiB, math.MaxInt64, 200 * MiB, 400 * MiB},         // outgrown: twice the lasting heap
		{270 * MiB, 230 * MiB, 50 * MiB, 230 * MiB},              // a cgroup's lower limit stays
		{270 * MiB, 1024 * MiB, 600 * MiB, 1024 * MiB},           // never above the ceiling
		{270 * MiB, math.MaxInt64, math.MaxInt64, math.MaxInt64}, // no overflow
	} {
		if got := heapLimit(c.target, c.ceiling, c.lasting); got != c.want {
			t.Errorf("heapLimit(%d MiB, %d, %d MiB) = %d, want %d", c.target>>20, c.ceiling, c.lasting>>20, got, c.want)
		}
	}
}

// TestHeapGuard: a target sets the limit; a live heap that lasts a minute raises it, up to the limit
// there was, and a smaller one brings it back down at once; no target restores the limit there was; and
// GOMEMLIMIT in the environment is left alone.
func TestHeapGuard(t *testing.T) {
	const MiB = 1 << 20
	unsetEnv(t, "GOMEMLIMIT")
	limit := int64(900 * MiB) // as Caddy sets it from a 1000 MiB cgroup
	var live int64
	g := &heapGuard{ceiling: -1, live: func() int64 { return live },
		setLimit: func(l int64) int64 {
			old := limit
			if l >= 0 {
				limit = l
			}
			return old
		}}
	t.Cleanup(func() { g.use(0) })
	if got := g.use(270 * MiB); got != 270*MiB || limit != 270*MiB {
		t.Fatalf("use(270 MiB) = %d, limit %d", got>>20, limit>>20)
	}
	// A lasting heap of 200 MiB with spikes to 300 MiB: the limit follows the smallest, doubled.
	for i := range 12 {
		live = 200 * MiB
		if i%3 == 0 {
			live = 300 * MiB
		}
		g.tick()
	}
	if limit != 400*MiB {
		t.Errorf("lasting 200 MiB: limit %d MiB, want 400", limit>>20)
	}
	// The data shrinks (records erased): the limit comes down at the next sample.
	live = 80 * MiB
	g.tick()
	if limit != 270*MiB {
		t.Errorf("lasting 80 MiB: limit %d MiB, want the target", limit>>20)
	}
	// A heap that grows raises the limit only once it has lasted a minute.
	live = 600 * MiB
	for range 11 {
		g.tick()
	}
	if limit != 270*MiB {
		t.Errorf("one sample of 80 MiB still in the minute: limit %d MiB, want the target", limit>>20)
	}
	g.tick()
	if limit != 900*MiB {
		t.Errorf("lasting 600 MiB: limit %d MiB, want the ceiling of 900", limit>>20)
	}
	// A reload onto a store without a target (PostgreSQL) restores the ceiling.
	if got := g.use(0); got != 900*MiB || limit != 900*MiB {
		t.Errorf("use(0) = %d, limit %d MiB, want 900", got>>20, limit>>20)
	}
	if g.stop != nil {
		t.Error("the sampling goroutine runs without a target")
	}
	// GOMEMLIMIT set: nothing changes.
	t.Setenv("GOMEMLIMIT", "1GiB")
	if got := g.use(270 * MiB); got != -1 || limit != 900*MiB {
		t.Errorf("GOMEMLIMIT set: use = %d, limit %d MiB", got, limit>>20)
	}
}

// TestHeapTargetOfTheStores: a node over Badger gets Badger's heap target as its soft memory limit, and
// a reload onto PostgreSQL gives back the limit there was.
func TestHeapTargetOfTheStores(t *testing.T) {
	unsetEnv(t, "GOMEMLIMIT")
	before := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { theHeapGuard.use(0); debug.SetMemoryLimit(before) })
	open := func(a *App) { t.Helper(); openAndClose(t, a) }
	open(&App{dir: t.TempDir()})
	if got := debug.SetMemoryLimit(-1); got != badgerstore.HeapTarget {
		t.Errorf("over Badger: limit %d, want %d", got, badgerstore.HeapTarget)
	}
	open(&App{dsn: "postgres://directaid@127.0.0.1:1/none"}) // opening does not connect
	if got := debug.SetMemoryLimit(-1); got != before {
		t.Errorf("over PostgreSQL after Badger (a reload): limit %d, want %d", got, before)
	}
}
