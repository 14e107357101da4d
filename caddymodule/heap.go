package caddymodule

import (
	"math"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"slices"
	"sync"
	"time"
)

// heapGuard keeps Go's soft memory limit (debug.SetMemoryLimit) near the heap target of the store in
// use (store.Driver.HeapTarget) instead of the twice-the-live-heap that the collector lets a heap reach
// at GOGC 100. Most of a Badger node's heap under publishing comes and goes: the table builders of
// running compactions, which double its live size while they run. The limit is
//
//	min(ceiling, max(target, 2 × lasting))
//
// where ceiling is the limit in effect before (Caddy's, from a memory cgroup or the machine's memory)
// and lasting is the smallest live heap of the last minute: what stays between compactions (the
// memtables, the counters, the caches). A lasting heap over half the target raises the limit with it,
// so the collector never has to run without pause to hold a limit the data has outgrown.
//
// GOMEMLIMIT set in the environment is the operator's choice and is left alone, as GOGC is
// (setGCPercent). One guard serves the process, whose memory limit is one: the last store opened sets
// its target (a reload onto another store sets that store's, 0 for none).
type heapGuard struct {
	mu       sync.Mutex
	target   int64             // 0: no target; the ceiling is restored
	ceiling  int64             // the limit before the guard first set one (-1: not read yet)
	samples  [12]int64         // the live heap at the last ticks, every heapTick: one minute
	n        int               // samples taken, up to len(samples)
	next     int               // where the next sample goes
	live     func() int64      // the live heap now (liveHeap; tests replace it)
	setLimit func(int64) int64 // debug.SetMemoryLimit (tests replace it)
	stop     chan struct{}     // closed to stop the sampling goroutine; nil when none runs
}

// heapTick is how often the guard samples the live heap.
const heapTick = 5 * time.Second

var theHeapGuard = &heapGuard{ceiling: -1, live: liveHeap, setLimit: debug.SetMemoryLimit}

// heapLimit is the limit for target given the ceiling and the lasting live heap.
func heapLimit(target, ceiling, lasting int64) int64 {
	if lasting > math.MaxInt64/2 {
		return ceiling
	}
	return min(ceiling, max(target, 2*lasting))
}

// liveHeap is the heap the last collection marked live.
func liveHeap() int64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return int64(min(s[0].Value.Uint64(), math.MaxInt64))
}

// use sets the target of the store now in use (0: none) and returns the limit it set, or -1 when it
// leaves the limit alone (GOMEMLIMIT is set). A target starts the sampling goroutine; none stops it and
// restores the ceiling.
func (g *heapGuard) use(target int64) int64 {
	if _, set := os.LookupEnv("GOMEMLIMIT"); set {
		return -1
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.ceiling < 0 {
		g.ceiling = g.setLimit(-1)
	}
	g.target = target
	if target <= 0 {
		if g.stop != nil {
			close(g.stop)
			g.stop = nil
		}
		g.setLimit(g.ceiling)
		return g.ceiling
	}
	g.n, g.next = 0, 0
	limit := g.apply()
	if g.stop == nil {
		g.stop = make(chan struct{})
		go g.run(g.stop)
	}
	return limit
}

func (g *heapGuard) run(stop chan struct{}) {
	t := time.NewTicker(heapTick)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			g.tick()
		}
	}
}

// tick samples the live heap and sets the limit it calls for.
func (g *heapGuard) tick() {
	live := g.live()
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.target <= 0 {
		return
	}
	g.samples[g.next] = live
	g.next = (g.next + 1) % len(g.samples)
	g.n = min(g.n+1, len(g.samples))
	g.apply()
}

// apply sets the limit for the target and the samples (g.mu held).
func (g *heapGuard) apply() int64 {
	lasting := int64(0)
	if g.n > 0 {
		lasting = slices.Min(g.samples[:g.n])
	}
	limit := heapLimit(g.target, g.ceiling, lasting)
	g.setLimit(limit)
	return limit
}
