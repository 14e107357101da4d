package testserver

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"syscall"
	"time"
)

// Process is one started server process, the binary as Start runs it or as a test or the benchmark
// starts it otherwise (a shipped Caddyfile, a memory cgroup): its end is watched, so that waiting for it
// to answer notices an exit at once, and stopping it is a signal with a bound.
type Process struct {
	Cmd  *exec.Cmd
	done chan struct{}
}

// ErrExited is WaitAnswers' error when the process ends before it answers.
var ErrExited = errors.New("the process exited during start")

// StartProcess starts cmd and watches for its end.
func StartProcess(cmd *exec.Cmd) (*Process, error) {
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &Process{Cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(p.done) }()
	return p, nil
}

// Done is closed once the process has ended.
func (p *Process) Done() <-chan struct{} { return p.done }

// WaitAnswers polls url every 50 ms until it answers 200. It returns an error wrapping ErrExited (with
// the exit status) when the process ends first, and one saying so when limit passes.
func (p *Process) WaitAnswers(url string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		select {
		case <-p.done:
			return fmt.Errorf("%w (%v)", ErrExited, p.Cmd.ProcessState)
		default:
		}
		if resp, err := http.Get(url); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not answer within %s", url, limit)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Stop sends sig (SIGINT: a graceful stop; SIGKILL: a crash) and waits for the end, killing the process
// after grace. It does nothing once the process has ended.
func (p *Process) Stop(sig syscall.Signal, grace time.Duration) {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.Cmd.Process.Signal(sig)
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = p.Cmd.Process.Kill()
		<-p.done
	}
}
