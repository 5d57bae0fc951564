package batchctl

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/rowfate/rowfate/internal/testenv"
)

// rssHelperEnv, when set to a file path, makes the test binary a helper
// that runs os.Args[1:], writes the child's peak RSS in bytes to that file
// and exits with the child's code.
//
// The helper exists because Linux reports a wrong peak for a child that
// the test process starts directly: os/exec starts children with vfork,
// and at exec the kernel folds the high-water RSS of the address space
// being replaced (the test process's, shared by vfork) into the child's
// ru_maxrss. A parallel test run holds hundreds of MiB, so every child
// seemed to peak at that. The helper is a fresh, small process, so the
// child it starts inherits only the helper's few MiB.
const rssHelperEnv = "ROWFATE_TEST_RSS_OUT"

func TestMain(m *testing.M) {
	if out := os.Getenv(rssHelperEnv); out != "" {
		os.Exit(rssHelper(out, os.Args[1:]))
	}
	testenv.VerifyNoLeaks(m)
}

func rssHelper(out string, args []string) int {
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = os.Environ()
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		fmt.Fprintln(os.Stderr, "rss helper:", err)
		return 125
	}
	rss := cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss << 10
	if err := os.WriteFile(out, []byte(strconv.FormatInt(rss, 10)), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "rss helper:", err)
		return 125
	}
	if code := cmd.ProcessState.ExitCode(); code >= 0 {
		return code
	}
	return 126 // killed by a signal
}

// peakRSSCommand returns a command that runs bin with args through the
// RSS helper, and a function that reads the child's peak RSS after it ran.
func peakRSSCommand(t *testing.T, bin string, args ...string) (*exec.Cmd, func() int64) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "rss")
	cmd := exec.Command(self, append([]string{bin}, args...)...)
	cmd.Env = append(os.Environ(), rssHelperEnv+"="+out)
	return cmd, func() int64 {
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatalf("the RSS helper wrote no figure: %v", err)
		}
		n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
}

// TestPeakRSSIsTheChilds proves the helper measures the child, not the
// test process: with 400 MiB held here, a small child must report far
// less. Measured directly, the child reports the test process's peak.
func TestPeakRSSIsTheChilds(t *testing.T) {
	ballast := make([]byte, 400<<20)
	for i := range ballast {
		ballast[i] = 1
	}
	cmd, rss := peakRSSCommand(t, "/bin/true")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if got := rss(); got > 64<<20 {
		t.Fatalf("a /bin/true child measured %d MiB: the helper reports the parent's peak", got>>20)
	}
	direct := exec.Command("/bin/true")
	if err := direct.Run(); err != nil {
		t.Fatal(err)
	}
	t.Logf("direct measurement of /bin/true: %d MiB (the parent's), through the helper: %d MiB",
		direct.ProcessState.SysUsage().(*syscall.Rusage).Maxrss>>10, rss()>>20)
	ballast[0] = 0 // keep it alive to here
}
