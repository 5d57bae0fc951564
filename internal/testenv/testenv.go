// Package testenv is what the tests share about how they run: at which
// size (make test, or make test-long), how long a wait may last before
// the test calls it stuck, and the check that a package's tests leave no
// goroutine behind. It is imported by tests only.
//
// Tests wait on events and progress, never on a guess of how long
// something takes: a loaded 2-core machine runs everything several times
// slower, and a test that expects a time fails there. Patience is the one
// outer bound, far past any real wait, so that a test that is really
// stuck still fails with its own message before go test's -timeout kills
// the whole binary without one.
package testenv

import (
	"os"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// LongEnv is the variable that runs the tests at full size; make
// test-long sets it to 1.
const LongEnv = "ROWFATE_TEST_LONG"

// Long reports whether the tests run at full size (make test-long): the
// 10,000-key races, the fifty-round bootstrap races, the minute-long
// crash tests. make test runs them at a size that still exercises every
// path, on a busy 2-core machine, in its time budget.
func Long() bool { return os.Getenv(LongEnv) == "1" }

// Pick returns long under make test-long and normal otherwise.
func Pick[T any](normal, long T) T {
	if Long() {
		return long
	}
	return normal
}

// patience is the outer bound of a wait when the test has no deadline
// nearer than it.
const patience = 5 * time.Minute

// Patience is how long a test waits for something before it fails as
// stuck: five minutes, or less when go test's -timeout comes sooner (it
// leaves half a minute for the failure to be reported).
func Patience(t testing.TB) time.Duration {
	d := patience
	if td, ok := t.(interface{ Deadline() (time.Time, bool) }); ok {
		if dl, ok := td.Deadline(); ok {
			d = min(d, max(time.Until(dl)-30*time.Second, 10*time.Second))
		}
	}
	return d
}

// Until polls cond every 10 ms until it holds. After Patience it fails
// the test, saying what it waited for (what is called then, so it can
// show the state at that moment).
func Until(t testing.TB, cond func() bool, what func() string) {
	t.Helper()
	deadline := time.Now().Add(Patience(t))
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("still waiting after %v: %s", Patience(t), what())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Receive waits for a value from c and returns it, with false when c is
// closed. After Patience it fails the test with what it waited for.
func Receive[T any](t testing.TB, c <-chan T, what func() string) (T, bool) {
	t.Helper()
	timer := time.NewTimer(Patience(t))
	defer timer.Stop()
	select {
	case v, ok := <-c:
		return v, ok
	case <-timer.C:
		t.Fatalf("still waiting after %v: %s", Patience(t), what())
		var zero T
		return zero, false
	}
}

// VerifyNoLeaks runs a package's tests and then fails the binary if a
// goroutine its tests started is still running: a worker, feed, sender
// or connection a test forgot to stop is a leak the package's users
// would have too. Call it from TestMain.
func VerifyNoLeaks(m *testing.M, ignore ...goleak.Option) {
	goleak.VerifyTestMain(m, ignore...)
}
