// Command kidscope reads Kafka traffic from packet captures and reports
// client-instance-ID, telemetry and group member-ID violations.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/kidscope/kidscope/report"
)

// Exit codes, as CLI.md defines them.
const (
	exitOK          = 0
	exitFindings    = 1
	exitBadInput    = 2
	exitInterrupted = 130
)

// exitError carries an exit code up to main.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:]))
}

func run(ctx context.Context, args []string) int {
	root, writeProfiles := newRoot()
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	writeProfiles()
	if err == nil {
		return exitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			// An error of several lines (one per input that could not
			// be read) has each line marked as kidscope's.
			for _, line := range strings.Split(ee.err.Error(), "\n") {
				fmt.Fprintln(os.Stderr, "kidscope:", report.SafeText(line))
			}
		}
		return ee.code
	}
	// cobra's own usage errors (unknown flag, missing argument).
	fmt.Fprintln(os.Stderr, "kidscope:", report.SafeText(err.Error()))
	return exitBadInput
}
