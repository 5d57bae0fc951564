package exec_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/rowfate/rowfate/batch"
	"github.com/rowfate/rowfate/internal/testenv"
	"github.com/rowfate/rowfate/processors/exec"
)

// WorkerEnv, when set to a JSON WorkerSpec, makes the test binary a
// worker that runs one row through a Processor and exits: the tests that
// kill or stop a worker do it to this process, not to the test binary.
const WorkerEnv = "ROWFATE_EXEC_TEST_WORKER"

// WorkerSpec is what a test worker runs.
type WorkerSpec struct {
	Command  []string      `json:"command"`
	Env      []string      `json:"env"`
	StateDir string        `json:"state_dir"`
	Grace    time.Duration `json:"grace"`
	// Timeout is the row's deadline, as the engine gives the kind's.
	Timeout time.Duration `json:"timeout"`
}

func TestMain(m *testing.M) {
	if spec := os.Getenv(WorkerEnv); spec != "" {
		os.Exit(runWorker(spec))
	}
	testenv.VerifyNoLeaks(m)
}

// runWorker is the test worker's main.
func runWorker(spec string) int {
	var s WorkerSpec
	if err := json.Unmarshal([]byte(spec), &s); err != nil {
		fmt.Fprintln(os.Stderr, "test worker:", err)
		return 2
	}
	p, err := exec.New(exec.Config[map[string]string]{Command: s.Command, Env: s.Env, StateDir: s.StateDir, Grace: s.Grace})
	if err != nil {
		fmt.Fprintln(os.Stderr, "test worker:", err)
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.Timeout)
	defer cancel()
	ctx = batch.ContextWithRow(ctx, batch.RowInfo{TenantID: "acme", BatchID: 1, RowNo: 2, Attempt: 1, EffectKey: "acme/1/2"})
	id, err := p.Process(ctx, map[string]string{"ref": "J-1"})
	fmt.Println(id, err)
	return 0
}
