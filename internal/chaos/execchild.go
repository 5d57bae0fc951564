package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"
)

// execChild is the program of the customers-exec kind in a chaos run (the
// harness's own binary, run with -exec-child URL by the exec processor):
// it posts the row on stdin to the downstream with the row's effect key
// as Idempotency-Key and prints the id it answers. A failed call exits 1,
// which the processor retries; a worker killed mid-call leaves the key
// claimed, as a webhook's would.
func execChild(url string) int {
	key := os.Getenv("ROWFATE_EFFECT_KEY")
	row, err := io.ReadAll(io.LimitReader(os.Stdin, 1<<20))
	if err != nil || key == "" || !json.Valid(row) {
		fmt.Fprintf(os.Stderr, "exec child: key %q, row %q: %v\n", key, row, err)
		return 65 // EX_DATAERR: the processor broke the protocol
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(string(row)))
	if err != nil {
		fmt.Fprintln(os.Stderr, "exec child:", err)
		return 64
	}
	req.Header.Set("Idempotency-Key", key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Fprintln(os.Stderr, "exec child:", err)
		return 1
	}
	defer resp.Body.Close()
	var body struct {
		ID string `json:"id"`
	}
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&body) != nil || body.ID == "" {
		fmt.Fprintln(os.Stderr, "exec child: downstream answered", resp.Status)
		return 1
	}
	fmt.Println(body.ID)
	return 0
}
