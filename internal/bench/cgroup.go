package bench

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// memCgroup is a cgroup v1 memory controller child made for one server: the kernel OOM-kills the server
// if its memory (heap, page cache of its files included) passes the limit. Made as a child of the bench's
// own memory cgroup, so that nothing else on the machine is touched, and removed afterwards.
type memCgroup struct {
	Dir   string
	Limit int64
}

// newMemCgroup creates the cgroup, or says why it cannot (no cgroup v1 memory controller, no rights).
func newMemCgroup(limit int64) (*memCgroup, error) {
	own, err := ownMemoryCgroup()
	if err != nil {
		return nil, err
	}
	dir := filepath.Join("/sys/fs/cgroup/memory", own, fmt.Sprintf("directaid-bench-%d", os.Getpid()))
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("cgroup v1 memory: %w", err)
	}
	cg := &memCgroup{Dir: dir, Limit: limit}
	if err := cg.write("memory.limit_in_bytes", strconv.FormatInt(limit, 10)); err != nil {
		cg.remove()
		return nil, err
	}
	return cg, nil
}

// ownMemoryCgroup is this process's path in the cgroup v1 memory hierarchy.
func ownMemoryCgroup() (string, error) {
	f, err := os.Open("/proc/self/cgroup")
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) == 3 && slices.Contains(strings.Split(parts[1], ","), "memory") {
			return parts[2], nil
		}
	}
	return "", errors.New("no cgroup v1 memory controller (cgroup v2 only: use systemd-run --scope -p MemoryMax=…)")
}

func (cg *memCgroup) write(name, v string) error {
	return os.WriteFile(filepath.Join(cg.Dir, name), []byte(v), 0o644)
}

func (cg *memCgroup) read(name string) int64 {
	b, err := os.ReadFile(filepath.Join(cg.Dir, name))
	if err != nil {
		return -1
	}
	n, _ := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return n
}

// wrap is the command that starts argv inside the cgroup: the shell moves itself in, then execs, so
// the server is in the cgroup from its first instruction (and Caddy's automatic GOMEMLIMIT sees it).
func (cg *memCgroup) wrap(argv []string) []string {
	return append([]string{"/bin/sh", "-c", `echo $$ > "$0/cgroup.procs" && exec "$@"`, cg.Dir}, argv...)
}

// stats are the cgroup's peak usage, how often the limit was hit, and OOM kills.
func (cg *memCgroup) stats() (maxUsage, failcnt, oomKills int64) {
	maxUsage, failcnt, oomKills = cg.read("memory.max_usage_in_bytes"), cg.read("memory.failcnt"), -1
	if b, err := os.ReadFile(filepath.Join(cg.Dir, "memory.oom_control")); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "oom_kill "); ok {
				oomKills, _ = strconv.ParseInt(v, 10, 64)
			}
		}
	}
	return
}

// remove deletes the cgroup once its processes are gone.
func (cg *memCgroup) remove() { _ = os.Remove(cg.Dir) }

var goMemLimitLog = regexp.MustCompile(`"GOMEMLIMIT":\s*([0-9]+)`)

// goMemLimit is the GOMEMLIMIT Caddy logged at start (automemlimit reads the cgroup), or -1.
func goMemLimit(serverOutput string) int64 {
	m := goMemLimitLog.FindAllStringSubmatch(serverOutput, -1)
	if len(m) == 0 {
		return -1
	}
	n, _ := strconv.ParseInt(m[len(m)-1][1], 10, 64)
	return n
}
