package store

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// TestNewIDNear: an id made near a point is an id like NewID's (valid, its time first, in order), tells
// the group of the point's 5 km cell, and keeps the rest random; without a point it is NewID's.
func TestNewIDNear(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	groups := map[int]int{}
	prev := ""
	for i := range 4000 {
		ms := int64(1_790_000_000_000 + i)
		lat, lon := -4+r.Float64()*17, -79+r.Float64()*12 // Colombia's box
		id := NewIDNear(time.UnixMilli(ms), &lat, &lon)
		if !ValidID(id) || IDMillis(id) != ms || FirstIDAt(ms) > id || FirstIDAt(ms+1) <= id || id <= prev {
			t.Fatalf("%s (after %s) does not read as an id of %d", id, prev, ms)
		}
		prev = id
		if g := IDGroup(id); g != PlaceGroup(lat, lon) {
			t.Fatalf("%s at (%v, %v): group %d, the cell's %d", id, lat, lon, g, PlaceGroup(lat, lon))
		}
		groups[PlaceGroup(lat, lon)]++
		a, b := NewIDNear(time.UnixMilli(ms), nil, &lon), NewIDNear(time.UnixMilli(ms), nil, &lon)
		if IDGroup(a) != IDGroup(b) {
			groups[-1]++ // without a point the group is random
		}
	}
	// Cells spread over the groups (4000 points, 64 groups: ~62 each).
	for g := range IDGroups {
		if groups[g] < 25 || groups[g] > 110 {
			t.Errorf("group %d holds %d of 4000 points", g, groups[g])
		}
	}
	if groups[-1] < 3800 {
		t.Errorf("ids without a point shared their group %d times in 4000", 4000-groups[-1])
	}
	// Points of one 5 km cell share a group; the random bits still tell their ids apart.
	seen := map[string]bool{}
	for range 1000 {
		lat, lon := 4.5303+r.Float64()*0.001, -75.6806+r.Float64()*0.001
		id := NewIDNear(time.UnixMilli(1_790_000_000_000), &lat, &lon)
		if IDGroup(id) != PlaceGroup(4.5303, -75.6806) || seen[id] {
			t.Fatalf("%s: group %d, want %d; seen before: %v", id, IDGroup(id), PlaceGroup(4.5303, -75.6806), seen[id])
		}
		seen[id] = true
	}
}

// TestIDGroup: the group of any string, by characters, as migration 0020's SQL reads it (pgstore's
// TestPersonalPartition checks the two agree); a character outside the alphabet counts 0.
func TestIDGroup(t *testing.T) {
	for id, want := range map[string]int{
		"": 0, "a": 10, "zz": 31 + 32, "yz": 31, "06h1f2zn4q9jhrf1": 1 + 32, "06h1f2zn4q9jhrg1": 1,
		"x€z": 31, "z€": 32, "ñ1": 1, "1ñ": 32, "ab𝄞": 32, "a𝄞b": 11, strings.Repeat("9", 40): 9 + 32,
	} {
		if got := IDGroup(id); got != want {
			t.Errorf("IDGroup(%q) = %d, want %d", id, got, want)
		}
	}
}

// TestIDsOfOneMillisecondAndCell: ids made by one process in one millisecond for one cell never repeat
// (the sequence, not chance, tells them apart), and they sort in the order they were made.
func TestIDsOfOneMillisecondAndCell(t *testing.T) {
	at := time.UnixMilli(1_790_000_000_000)
	lat, lon := 4.5303, -75.6806
	seen := make(map[string]bool, 200_000)
	for i := range 200_000 {
		id := NewIDNear(at, &lat, &lon)
		if seen[id] {
			t.Fatalf("id %s made twice (the %d-th)", id, i)
		}
		seen[id] = true
		if id2 := NewID(at); seen[id2] {
			t.Fatalf("id %s without a point made twice", id2)
		} else {
			seen[id2] = true
		}
	}
}

// TestIDsWithAndWithoutAPointNeverMeet forces the case where a sequence number without a point equals the
// bits a point's id was given (sequence then group): the two ids still differ, as the sequence alone
// tells ids apart.
func TestIDsWithAndWithoutAPointNeverMeet(t *testing.T) {
	at := time.UnixMilli(1_790_000_000_000)
	lat, lon := 4.5303, -75.6806
	saved := idSeq.Load()
	defer idSeq.Store(saved)
	idSeq.Store(999)
	withPoint := NewIDNear(at, &lat, &lon) // sequence 1000
	idSeq.Store(1000<<6 | uint32(PlaceGroup(lat, lon)) - 1)
	if without := NewID(at); without == withPoint {
		t.Fatalf("an id without a point repeats %s, an id with one", withPoint)
	}
}
