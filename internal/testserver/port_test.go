package testserver

import (
	"os"
	"os/exec"
	"strconv"
	"testing"
)

// TestLoopbackPortReserved: a port handed out is never handed out again while its holder lives — to
// this process or to another one — and a port another holder has is skipped.
func TestLoopbackPortReserved(t *testing.T) {
	if os.Getenv("TESTSERVER_PORT_CHILD") != "" {
		// A second test process: it must not be given the parent's port.
		parent, _ := strconv.Atoi(os.Getenv("TESTSERVER_PORT_CHILD"))
		if f, ok := reservePort(parent); ok {
			f.Close()
			t.Fatalf("the parent's port %d could be reserved again by another process", parent)
		}
		return
	}
	lo := 20000 + 100*os.Getpid()%9000 // a small range of its own, so parallel test runs do not meet here
	held := map[int]bool{}
	for range 10 {
		p, err := loopbackPort(lo, lo+10)
		if err != nil {
			t.Fatalf("after %d ports: %v", len(held), err)
		}
		if held[p] {
			t.Fatalf("port %d handed out twice", p)
		}
		held[p] = true
	}
	if p, err := loopbackPort(lo, lo+10); err == nil {
		t.Fatalf("an eleventh port %d from a range of ten", p)
	}
	for p := range held {
		if f, ok := reservePort(p); ok {
			f.Close()
			t.Fatalf("port %d could be reserved again in this process", p)
		}
		cmd := exec.Command(os.Args[0], "-test.run=^TestLoopbackPortReserved$")
		cmd.Env = append(os.Environ(), "TESTSERVER_PORT_CHILD="+strconv.Itoa(p))
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("child: %v\n%s", err, out)
		}
		break
	}
}
