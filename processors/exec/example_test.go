//go:build unix

package exec_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/rowfate/rowfate/batch"
	"github.com/rowfate/rowfate/processors/exec"
)

// Shipment is a row of a shipments file.
type Shipment struct {
	Ref string `col:"ref" validate:"required" json:"ref"`
}

// Example runs a program per row: the row arrives as JSON on stdin, the
// row's effect key in ROWFATE_EFFECT_KEY, and the first line the program
// prints is the row's id.
func Example() {
	state, err := os.MkdirTemp("", "rowfate-exec-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(state)
	p, err := exec.New(exec.Config[Shipment]{
		// A real kind runs its own program; sh shows the protocol.
		Command: []string{"sh", "-c", `read -r row; echo "shipped:$ROWFATE_EFFECT_KEY"`},
		// Where runs under way are recorded, for the next worker to kill
		// what this one left should it die (the default is the user's
		// runtime directory).
		StateDir: state,
	})
	if err != nil {
		log.Fatal(err)
	}
	ctx := batch.ContextWithRow(context.Background(), batch.RowInfo{TenantID: "acme", BatchID: 1, RowNo: 2, Attempt: 1, EffectKey: "acme/1/2"})
	id, err := p.Process(ctx, Shipment{Ref: "S-1"})
	fmt.Println(id, err)
	// Output: shipped:acme/1/2 <nil>
}
