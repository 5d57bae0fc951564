//go:build chaos

package failpoint

import (
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// Enabled reports whether failpoints are compiled in.
const Enabled = true

var (
	once  sync.Once
	armed map[string]float64
)

func load() {
	armed = map[string]float64{}
	for _, kv := range strings.Split(os.Getenv("ROWFATE_FAILPOINTS"), ",") {
		name, p, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok {
			continue
		}
		if f, err := strconv.ParseFloat(p, 64); err == nil && f > 0 {
			armed[name] = f
		}
	}
}

// Hit kills the process with SIGKILL when the failpoint is armed and its
// draw comes up.
func Hit(name string) {
	once.Do(load)
	if p, ok := armed[name]; ok && rand.Float64() < p {
		os.Stderr.WriteString("failpoint " + name + ": crashing\n")
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // the signal arrives
	}
}
