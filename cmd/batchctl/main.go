// Command batchctl imports files into rowfate batches, works their rows and
// reads every row's outcome back. `batchctl help` lists the commands and
// `batchctl help COMMAND` explains one; ARCHITECTURE.md at the repository
// root describes the engine behind it.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := Run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
