// Package failpoint crashes the process at named points of the engine, for
// the chaos harness (cmd/rowfate-chaos): the places where a crash is hardest
// to survive — after a claim, after an effect and before its outcome is
// recorded, inside the transaction that records it.
//
// Failpoints exist only in a binary built with the chaos build tag
// (go build -tags chaos); in any other build Hit is an empty function the
// compiler removes. In a chaos build, $ROWFATE_FAILPOINTS lists the points
// to arm and the probability of each, "after-claim=0.01,in-ack=0.005";
// an armed point that fires kills the process with SIGKILL, as a crash
// would: no deferred function runs, nothing is flushed.
package failpoint

// The failpoints.
const (
	// AfterClaim: a worker leased a chunk and has not worked it yet.
	AfterClaim = "after-claim"
	// AfterEffect: the processor returned for a chunk's rows (an external
	// effect happened) and the outcomes are not recorded yet.
	AfterEffect = "after-effect"
	// InAck: inside the transaction that records a chunk's outcomes,
	// after its writes, before the commit.
	InAck = "in-ack"
)
