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

// Exit codes, as docs/design/cli.md defines them.
const (
	exitOK          = 0
	exitFindings    = 1
	exitBadInput    = 2
	exitInterrupted = 130
)

// exitError carries an exit code up to main; usage adds the command's
// usage line to the message.
type exitError struct {
	code  int
	err   error
	usage bool
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
	cmd, err := root.ExecuteContextC(ctx)
	writeProfiles()
	if err == nil {
		return exitOK
	}
	var ee *exitError
	if !errors.As(err, &ee) {
		// cobra's own errors (an unknown command, a required flag
		// missing) are all mistakes in the command line.
		ee = &exitError{code: exitBadInput, err: err, usage: true}
	}
	if ee.err != nil {
		// An error of several lines (one per input that could not be
		// read) has each line marked as kidscope's.
		for _, line := range strings.Split(ee.err.Error(), "\n") {
			fmt.Fprintln(os.Stderr, "kidscope:", report.SafeText(line))
		}
	}
	if ee.usage && cmd != nil {
		use := cmd.UseLine()
		if !cmd.Runnable() {
			use = cmd.CommandPath() + " COMMAND [flags]"
		}
		fmt.Fprintf(os.Stderr, "Usage: %s\nRun '%s --help' for more.\n", use, cmd.CommandPath())
	}
	return ee.code
}
