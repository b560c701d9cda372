package filter

import (
	"fmt"
	"math/rand/v2"
	"os/exec"
	"strings"
	"testing"

	"github.com/gopacket/gopacket/layers"
)

// randomArith writes a random arithmetic expression of at most depth
// levels, from the constructs libpcap's grammar has.
func randomArith(r *rand.Rand, depth int) string {
	if depth == 0 || r.IntN(3) == 0 {
		switch r.IntN(6) {
		case 0:
			return "len"
		case 1, 2:
			return fmt.Sprint([]int{0, 1, 2, 3, 4, 5, 8, 13, 14, 20, 31, 64, 255, 0x800, 9092}[r.IntN(15)])
		}
		protos := []string{"ether", "ip", "ip6", "tcp", "udp", "icmp", "icmp6", "arp", "sctp"}
		idx := fmt.Sprint(r.IntN(60))
		if depth > 0 && r.IntN(3) == 0 {
			idx = randomArith(r, depth-1)
		}
		size := []string{"", ":1", ":2", ":4"}[r.IntN(4)]
		return protos[r.IntN(len(protos))] + "[" + idx + size + "]"
	}
	if r.IntN(8) == 0 {
		return "-" + randomArith(r, depth-1)
	}
	ops := []string{"+", "-", "*", "/", "%", "&", "|", "^", "<<", ">>"}
	e := randomArith(r, depth-1) + " " + ops[r.IntN(len(ops))] + " " + randomArith(r, depth-1)
	if r.IntN(2) == 0 {
		e = "(" + e + ")"
	}
	return e
}

func randomFilter(r *rand.Rand) string {
	rels := []string{"=", "!=", "<", "<=", ">", ">="}
	term := func() string {
		switch r.IntN(8) {
		case 0:
			return []string{"tcp", "udp", "ip", "ip6", "icmp", "port 9092", "host 10.0.0.1", "vlan", "less 100", "greater 60"}[r.IntN(10)]
		case 1:
			return "not " + randomArith(r, 2) + " " + rels[r.IntN(6)] + " " + randomArith(r, 1)
		}
		return randomArith(r, 3) + " " + rels[r.IntN(6)] + " " + randomArith(r, 2)
	}
	e := term()
	for n := r.IntN(3); n > 0; n-- {
		e += []string{" and ", " or "}[r.IntN(2)] + term()
	}
	return e
}

// TestRandomAgainstTcpdump compiles random arithmetic filters for each link
// type in turn and requires tcpdump -ddd's program, instruction for
// instruction, or the same refusal.
func TestRandomAgainstTcpdump(t *testing.T) {
	td := tcpdumpPath(t)
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(15, 2026))
	n := 400
	if testing.Short() {
		n = 50
	}
	same, refused := 0, 0
	for i := 0; i < n; i++ {
		expr := randomFilter(r)
		l := testLinks[i%len(testLinks)]
		args := []string{"-ddd", "-y", l.name, "--", expr}
		if l.link == layers.LinkTypeNull || l.link == layers.LinkTypeLoop {
			args = []string{"-ddd", "-r", writePcap(t, dir, l.link, nil), "--", expr}
		}
		var stderr strings.Builder
		cmd := exec.Command(td, args...)
		cmd.Stderr = &stderr
		out, terr := cmd.Output()
		if terr != nil {
			out = []byte(stderr.String())
		}
		p, cerr := Compile(expr, l.link, 0)
		switch {
		case terr != nil && strings.Contains(string(out), "rejects all packets"):
			if cerr != nil || !p.MatchesNothing() {
				t.Errorf("%s %q: tcpdump: %s; we: %v\n%v", l.name, expr, out, cerr, p)
			}
			continue
		case terr != nil:
			if cerr == nil {
				t.Errorf("%s %q: tcpdump refuses it (%s), Compile accepts it", l.name, expr, strings.TrimSpace(string(out)))
			}
			refused++
			continue
		case cerr != nil:
			t.Errorf("%s %q: Compile: %v; tcpdump accepts it", l.name, expr, cerr)
			continue
		}
		want, err := ParseRaw(string(out))
		if err != nil {
			t.Fatalf("%q: %v", expr, err)
		}
		if got := p.Raw(); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s %q: differs from tcpdump -ddd\ngot:\n%s", l.name, expr, p)
			continue
		}
		same++
	}
	t.Logf("%d random filters: %d the same program as tcpdump's, %d refused by both", n, same, refused)
}
