package main

import (
	"os"
	"testing"

	"github.com/spf13/cobra"
)

// TestBudgetShares: the caps not given take their shares of the memory
// limit, grow and shrink with it, and a cap given by its flag is used as
// given.
func TestBudgetShares(t *testing.T) {
	small, dflt, big := budgetFor(64<<20), budgetFor(0), budgetFor(1<<30)
	if dflt != budgetFor(defaultBudgetFor) {
		t.Errorf("no limit shares %+v, want the default limit's %+v", dflt, budgetFor(defaultBudgetFor))
	}
	for _, c := range []struct {
		name           string
		s, d, b        int64
		costAtDefault  int64
		shareAtDefault float64
	}{
		{"connections", int64(small.connections), int64(dflt.connections), int64(big.connections), connectionCost, 0.45},
		{"pages", int64(small.pages), int64(dflt.pages), int64(big.pages), pageSize, 0.125},
		{"closed connections", int64(small.closedConns), int64(dflt.closedConns), int64(big.closedConns), closedConnCost, 0.1},
		{"instances", int64(small.instances), int64(dflt.instances), int64(big.instances), instanceCost, 0.1},
		{"findings", int64(small.findings), int64(dflt.findings), int64(big.findings), findingCost, 0.15},
		{"resync bytes", small.resyncBytes, dflt.resyncBytes, big.resyncBytes, 1, 1.0 / 16},
		{"body bytes", small.bodyBytes, dflt.bodyBytes, big.bodyBytes, 1, 1.0 / 16},
		{"TLS held bytes", small.tlsHeld, dflt.tlsHeld, big.tlsHeld, 1, 1.0 / 16},
		{"TLS client randoms", int64(small.tlsKeys), int64(dflt.tlsKeys), int64(big.tlsKeys), tlsKeyCost, 1.0 / 16},
	} {
		if !(c.s < c.d && c.d < c.b) {
			t.Errorf("%s: %d, %d, %d at 64 MiB, 200 MiB, 1 GiB: want growing with the limit", c.name, c.s, c.d, c.b)
		}
		// The share docs/security.md's table gives, to rounding.
		if spent := float64(c.d*c.costAtDefault) / defaultBudgetFor; spent > c.shareAtDefault*1.001 || spent < c.shareAtDefault*0.999 {
			t.Errorf("%s: %d at 200 MiB spend %.4f of it, not the %.4f share", c.name, c.d, spent, c.shareAtDefault)
		}
	}
	if dflt.pagesPerConn > maxPagesPerConn || big.pagesPerConn != maxPagesPerConn || small.pagesPerConn > small.pages {
		t.Errorf("pages per connection %d, %d, %d", small.pagesPerConn, dflt.pagesPerConn, big.pagesPerConn)
	}

	for _, tc := range []struct {
		args      []string
		env       string
		wantConns int
		wantBody  int64
	}{
		{nil, "", dflt.connections, dflt.bodyBytes},
		{[]string{"--memory-limit", "64MiB"}, "", small.connections, small.bodyBytes},
		{[]string{"--memory-limit", "64MiB", "--max-connections", "7", "--max-body-buffer", "3MiB"}, "", 7, 3 << 20},
		{nil, "1GiB", big.connections, big.bodyBytes},
		{[]string{"--memory-limit", "64MiB"}, "1GiB", small.connections, small.bodyBytes},
	} {
		t.Setenv("GOMEMLIMIT", tc.env) // restored when the test ends
		if tc.env == "" {
			os.Unsetenv("GOMEMLIMIT")
		}
		var in inputFlags
		cmd := &cobra.Command{Use: "x", RunE: func(*cobra.Command, []string) error { return nil }}
		in.register(cmd, "table")
		in.registerWorkers(cmd)
		if err := cmd.ParseFlags(tc.args); err != nil {
			t.Fatal(err)
		}
		opt, _, _, err := in.options(cmd, []string{"x.pcap"})
		if err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		if opt.Reassembly.MaxConnections != tc.wantConns || opt.BodyBytes != tc.wantBody {
			t.Errorf("%v GOMEMLIMIT=%q: %d connections, %d body bytes; want %d, %d", tc.args, tc.env,
				opt.Reassembly.MaxConnections, opt.BodyBytes, tc.wantConns, tc.wantBody)
		}
	}
}
