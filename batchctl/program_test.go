package batchctl

import (
	"bytes"
	"encoding/json"
	"fmt"
	"mime/multipart"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rowfate/rowfate/internal/testdb"
	"github.com/rowfate/rowfate/internal/testenv"
)

// ordersProgram is a whole program of a team's own, as README shows it:
// batchctl with an import kind and a recalculation of the team's, and
// none of the built-in kinds. Its effect is a line in $ORDERS_LEDGER.
const ordersProgram = `// Command orders is batchctl with a team's own kinds.
package main

import (
	"context"
	"fmt"
	"iter"
	"os"
	"strconv"

	"github.com/rowfate/rowfate/batch"
	"github.com/rowfate/rowfate/batchctl"
)

// Order is one row of an orders file.
type Order struct {
	Ref    string ` + "`" + `col:"ref" validate:"required"` + "`" + `
	Amount int64  ` + "`" + `col:"amount" validate:"gte=0"` + "`" + `
}

func main() {
	batchctl.Main(register)
}

func register(ctx context.Context, reg *batch.Registry, db batchctl.Database) error {
	err := batch.Register(reg, batch.Kind[Order]{
		Name:        "orders",
		Description: "orders, each booked in the ledger",
		Processor:   batch.ProcessFunc[Order](book("booked")),
	})
	if err != nil {
		return err
	}
	return batch.RegisterRecalc(reg, batch.RecalcKind[Order]{
		Name:        "orders-reprice",
		Description: "every order priced again",
		RowsFunc: func(ctx context.Context, tenant string, params map[string]string) iter.Seq2[Order, error] {
			return func(yield func(Order, error) bool) {
				for i := 1; i <= 3; i++ {
					if !yield(Order{Ref: "R" + strconv.Itoa(i), Amount: int64(10 * i)}, nil) {
						return
					}
				}
			}
		},
		Processor: batch.ProcessFunc[Order](book("repriced")),
	})
}

// book appends "<what> <ref> <amount>" to $ORDERS_LEDGER.
func book(what string) func(context.Context, Order) (string, error) {
	return func(_ context.Context, o Order) (string, error) {
		f, err := os.OpenFile(os.Getenv("ORDERS_LEDGER"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return "", err
		}
		defer f.Close()
		if _, err := fmt.Fprintf(f, "%s %s %d\n", what, o.Ref, o.Amount); err != nil {
			return "", err
		}
		return what + "-" + o.Ref, nil
	}
}
`

// buildProgram builds src as the main package of a module of its own that
// requires this repository (by a replace directive), as a team's program
// would, and returns the binary. The module lists this repository's
// requirements so that the build needs no network.
func buildProgram(t *testing.T, src string) string {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	ourMod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	goLine, requires, _ := strings.Cut(string(ourMod), "\nrequire")
	_, goLine, _ = strings.Cut(goLine, "\ngo ")
	mod := fmt.Sprintf("module example.com/orders\n\ngo %s\n\nrequire github.com/rowfate/rowfate v0.0.0\n\nreplace github.com/rowfate/rowfate => %s\n\nrequire%s",
		strings.TrimSpace(goLine), root, requires)
	dir := t.TempDir()
	for name, data := range map[string][]byte{"go.mod": []byte(mod), "go.sum": sum, "main.go": []byte(src)} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	bin := filepath.Join(dir, "orders")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Dir = dir
	build.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build of the program: %v\n%s\ngo.mod:\n%s", err, out, mod)
	}
	return bin
}

// TestAProgramOfYourOwn builds a program like README's — batchctl with a
// team's own import kind and recalculation, without the built-in kinds —
// in a module of its own, then lists its kinds, imports a file, runs the
// recalculation and serves: an upload to its API is worked by the
// service's workers with the team's processor.
func TestAProgramOfYourOwn(t *testing.T) {
	t.Parallel()
	bin := buildProgram(t, ordersProgram)
	dir := t.TempDir()
	db := testdb.SQLitePath(t)
	ledger := filepath.Join(dir, "ledger")
	orders := func(args ...string) result {
		t.Helper()
		cmd := exec.Command(bin, append(args, "--database", db)...)
		cmd.Env = append(os.Environ(), "DATABASE_URL=", "ORDERS_LEDGER="+ledger)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		code := cmd.ProcessState.ExitCode()
		if err != nil && code < 0 {
			t.Fatalf("%s: %v", strings.Join(args, " "), err)
		}
		return result{code: code, stdout: stdout.String(), stderr: stderr.String()}
	}

	r := orders("kinds", "-o", "json")
	var kinds []jsonKind
	if r.code != exitOK || json.Unmarshal([]byte(r.stdout), &kinds) != nil {
		t.Fatalf("kinds: %s", r)
	}
	var names []string
	for _, k := range kinds {
		names = append(names, k.Name+"/"+k.Direction)
	}
	if got := strings.Join(names, " "); got != "orders/import orders-reprice/recalc" {
		t.Fatalf("kinds = %s, want the program's two and no built-in one", got)
	}

	file := writeFile(t, "orders.csv", []byte("ref,amount\nA1,5\nA2,7\n,3\n"))
	if r := orders("import", "orders", file); r.code != exitRows || !strings.Contains(r.stdout, "succeeded  2") || !strings.Contains(r.stdout, "invalid  1") {
		t.Fatalf("import: want 2 succeeded and 1 invalid (exit 3): %s", r)
	}
	if r := orders("recalc", "orders-reprice"); r.code != exitOK || !strings.Contains(r.stdout, "succeeded  3") {
		t.Fatalf("recalc: %s", r)
	}
	if r := orders("import", "customers", file); r.code != exitUsage || !strings.Contains(r.stderr, `unknown kind "customers"`) {
		t.Fatalf("a built-in kind the program did not register: %s", r)
	}
	want := "booked A1 5\nbooked A2 7\nrepriced R1 10\nrepriced R2 20\nrepriced R3 30\n"
	if got, _ := os.ReadFile(ledger); string(got) != want {
		t.Fatalf("ledger:\n%s\nwant:\n%s", got, want)
	}

	base, log := startServeEnv(t, bin, []string{"ROWFATE_WORKER_TOKEN=dev", "ORDERS_LEDGER=" + ledger},
		"--token", "tok", "--database", db)
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	_ = mw.WriteField("kind", "orders")
	part, _ := mw.CreateFormFile("file", "served.csv")
	_, _ = part.Write([]byte("ref,amount\nS1,1\nS2,2\n"))
	_ = mw.Close()
	req, _ := http.NewRequest(http.MethodPost, base+"/v1/batches", &body)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("Authorization", "Bearer tok")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var created struct {
		ID int64 `json:"id"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&created)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated || created.ID == 0 {
		t.Fatalf("POST /v1/batches: %s\n%s", resp.Status, log.String())
	}
	var status string
	testenv.Until(t, func() bool {
		req, _ := http.NewRequest(http.MethodGet, fmt.Sprintf("%s/v1/batches/%d", base, created.ID), nil)
		req.Header.Set("Authorization", "Bearer tok")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		var b struct {
			Status string `json:"status"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&b)
		status = b.Status
		return status == "finished"
	}, func() string { return "the served batch is " + status + "\n" + log.String() })
	want += "booked S1 1\nbooked S2 2\n"
	if got, _ := os.ReadFile(ledger); string(got) != want {
		t.Fatalf("ledger after the served batch:\n%s\nwant:\n%s", got, want)
	}
}
