package filter

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gopacket/gopacket/layers"
	"golang.org/x/net/bpf"
)

var update = flag.Bool("update", false, "regenerate testdata/*.tcpdump-d.txt with the tcpdump on PATH")

// goldenCases are the expressions whose tcpdump -d output is committed.
// Every program is compared instruction for instruction; TestVerdicts
// compares what they select. The NULL and LOOP outputs are made with
// "tcpdump -r FILE -d" on an empty capture of that link type, because
// libpcap compiles ip6 differently for a file (the BSD AF_INET6 values)
// than for "-y" alone (the compiling host's AF_INET6, 10 on Linux), and
// Compile is for files.
var goldenCases = []struct {
	link string
	expr string
}{
	{"EN10MB", "tcp"},
	{"EN10MB", "udp"},
	{"EN10MB", "ip"},
	{"EN10MB", "ip6"},
	{"EN10MB", "host 10.0.0.1"},
	{"EN10MB", "src host 10.0.0.1"},
	{"EN10MB", "dst host 10.0.0.1"},
	{"EN10MB", "src and dst host 10.0.0.3"},
	{"EN10MB", "host ::1"},
	{"EN10MB", "src 2001:db8::1"},
	{"EN10MB", "net 10.0.0.0/8"},
	{"EN10MB", "net 10.1"},
	{"EN10MB", "src net 192.168.0.0/16"},
	{"EN10MB", "net 10.1.0.0 mask 255.255.0.0"},
	{"EN10MB", "net 0.0.0.0/0"},
	{"EN10MB", "net 2001:db8::/32"},
	{"EN10MB", "dst net 2001:db8::/33"},
	{"EN10MB", "port 9092"},
	{"EN10MB", "src port 9092"},
	{"EN10MB", "dst port 9092"},
	{"EN10MB", "tcp port 9092"},
	{"EN10MB", "udp port 53"},
	{"EN10MB", "port 1 or 2"},
	{"EN10MB", "port 1 and 2"},
	{"EN10MB", "portrange 9092-9094"},
	{"EN10MB", "tcp dst portrange 9000-9100"},
	{"EN10MB", "tcp and (port 9092 or portrange 9093-9095)"},
	{"EN10MB", "ip6 and port 1"},
	{"EN10MB", "not port 22"},
	{"EN10MB", "tcp and not port 22"},
	{"EN10MB", "host 10.0.0.1 and (port 9092 or 9093)"},
	{"EN10MB", "vlan"},
	{"EN10MB", "vlan 10"},
	{"EN10MB", "vlan and ip"},
	{"EN10MB", "vlan 10 and port 9092"},
	{"EN10MB", "vlan and vlan"},
	{"EN10MB", "vlan 10 or vlan 20"},
	{"EN10MB", "port 9092 or vlan"},
	{"EN10MB", "! port 1 && ! 2"},
	{"EN10MB", "tcp and port 1 or 2"},
	{"EN10MB", "not (host 10.0.0.1 or host 10.0.0.2)"},
	{"EN10MB", "ip or ip6 and tcp"},
	{"EN10MB", "tcp and (portrange 9092-9094 or port 9100)"},
	{"EN10MB", "tcp and (" + longPorts() + ")"}, // long jumps through "ja"
	{"LINUX_SLL", "tcp port 9092"},
	{"LINUX_SLL", "host 10.0.0.1"},
	{"LINUX_SLL", "ip6 and port 1"},
	{"LINUX_SLL", "tcp and (port 9092 or portrange 9093-9095)"},
	{"LINUX_SLL2", "tcp port 9092"},
	{"LINUX_SLL2", "host ::1"},
	{"RAW", "tcp port 9092"},
	{"RAW", "host 10.0.0.1"},
	{"RAW", "ip6 and port 1"},
	{"IPV4", "tcp"},
	{"IPV4", "host 10.0.0.1"},
	{"IPV6", "tcp"},
	{"IPV6", "port 9092"},
	{"NULL", "ip and host 10.0.0.1"},
	{"NULL", "tcp port 9092"},
	{"NULL", "ip6"},
	{"LOOP", "ip"},
	{"LOOP", "tcp and (port 9092 or portrange 9093-9095)"},
	// Byte offsets, arithmetic, named numbers, len, less, greater and the
	// protocol names that go with them.
	{"EN10MB", "tcp[13] & 2 != 0"},
	{"EN10MB", "tcp[tcpflags] & (tcp-syn|tcp-ack) = tcp-syn"},
	{"EN10MB", "tcp[13] & tcp-syn != 0 and tcp[tcpflags] & tcp-ack = 0"},
	{"EN10MB", "ip[0] & 0xf != 5"},
	{"EN10MB", "tcp[((tcp[12:1] & 0xf0) >> 2):4] = 0x47455420"},
	{"EN10MB", "udp[8:2] = 0x1234"},
	{"EN10MB", "ip6[6] = 58"},
	{"EN10MB", "icmp6[icmp6type] = icmp6-echo"},
	{"EN10MB", "icmp[icmptype] = icmp-echo"},
	{"EN10MB", "icmp[icmpcode] != 0 and icmp[icmptype] = icmp-unreach"},
	{"EN10MB", "icmp"},
	{"EN10MB", "icmp6"},
	{"EN10MB", "sctp"},
	{"EN10MB", "arp"},
	{"EN10MB", "rarp"},
	{"EN10MB", "arp[7] = 2"},
	{"EN10MB", "ether[0] & 1 != 0"},
	{"EN10MB", "link[12:2] = 0x800"},
	{"EN10MB", "len > 100"},
	{"EN10MB", "len <= 64"},
	{"EN10MB", "less 100"},
	{"EN10MB", "greater 1000 or less 64"},
	{"EN10MB", "ip[0] + ip[1] * 2 > len - 14"},
	{"EN10MB", "ip[2:2] - ((ip[0] & 0xf) << 2) - ((tcp[12] & 0xf0) >> 2) != 0"},
	{"EN10MB", "tcp port 9092 and (((ip[2:2] - ((ip[0]&0xf)<<2)) - ((tcp[12]&0xf0)>>2)) != 0)"},
	{"EN10MB", "len % 3 + 1 = 2"},
	{"EN10MB", "len ^ 3 | 1 = 6"},
	{"EN10MB", "-len % 3 = 1"},
	{"EN10MB", "ip[1:2] << 2 >> 1 = 4"},
	{"EN10MB", "ip[8] * 2 / 3 % 5 > 1"},
	{"EN10MB", "ip[0] + tcp[0] > 0"},
	{"EN10MB", "tcp[tcp[0]:2] = tcp[tcp[1]:4]"},
	{"EN10MB", "tcp[2:2] >= 9092 and tcp[2:2] <= 9094"},
	{"EN10MB", "port 1 or 2 > 1"},
	{"EN10MB", "tcp and 1 = 1"},
	{"EN10MB", "(tcp[13] & 2 != 0 or udp)"},
	{"EN10MB", "vlan and tcp[13] = 2"},
	{"LINUX_SLL", "tcp[13] & 2 != 0"},
	{"LINUX_SLL", "ip[0] & 0xf != 5"},
	{"LINUX_SLL2", "tcp[((tcp[12:1] & 0xf0) >> 2):4] = 0x47455420"},
	{"LINUX_SLL2", "len > 100"},
	{"RAW", "tcp[13] & 2 != 0"},
	{"RAW", "icmp"},
	{"RAW", "ip6[6] = 6"},
	{"IPV4", "ip[0] & 0xf != 5"},
	{"IPV4", "icmp[0] = 8"},
	{"IPV6", "icmp6[0] = 128"},
	{"IPV6", "ip6[6] = 6"},
	{"NULL", "tcp[13] & 2 != 0"},
	{"NULL", "ip6[6] = 6"},
	{"LOOP", "icmp[0] = 8"},
	{"LOOP", "greater 60"},
}

func longPorts() string {
	var ps []string
	for p := 1; p <= 40; p++ {
		ps = append(ps, "port "+strconv.Itoa(p))
	}
	return strings.Join(ps, " or ")
}

var slugRE = regexp.MustCompile(`[^a-z0-9]+`)

func goldenPath(link, expr string) string {
	s := strings.Trim(slugRE.ReplaceAllString(strings.ToLower(expr), "-"), "-")
	if len(s) > 60 {
		s = fmt.Sprintf("%s-%08x", s[:50], crc(expr))
	}
	return filepath.Join("testdata", strings.ToLower(link)+"."+s+".tcpdump-d.txt")
}

func crc(s string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(s); i++ {
		h = (h ^ uint32(s[i])) * 16777619
	}
	return h
}

// tcpdumpPath finds tcpdump; without it the test is skipped, unless CI is
// set, where it fails.
func tcpdumpPath(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("tcpdump")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("tcpdump is not installed, and CI is set: install it (apt-get install tcpdump)")
		}
		t.Skip("tcpdump is not installed: comparison with tcpdump's own verdicts skipped")
	}
	return p
}

// TestGolden compares each program with the committed tcpdump -d output:
// exactly, or by running both on the packet set (see compareMode). With
// -update and tcpdump installed the outputs are made again first.
func TestGolden(t *testing.T) {
	if *update {
		td := tcpdumpPath(t)
		dir := t.TempDir()
		for _, c := range goldenCases {
			// "--": an expression may start with a minus.
			args := []string{"-d", "-y", c.link, "--", c.expr}
			if l := linkByName(c.link); l == layers.LinkTypeNull || l == layers.LinkTypeLoop {
				args = []string{"-d", "-r", writePcap(t, dir, l, nil), "--", c.expr}
			}
			out, err := exec.Command(td, args...).Output()
			if err != nil {
				t.Fatalf("tcpdump %q: %v", args, err)
			}
			if err := os.WriteFile(goldenPath(c.link, c.expr), out, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	seen := map[string]bool{}
	for _, c := range goldenCases {
		path := goldenPath(c.link, c.expr)
		if seen[path] {
			t.Fatalf("two cases write %s", path)
		}
		seen[path] = true
		t.Run(c.link+"/"+c.expr, func(t *testing.T) {
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test -run TestGolden -update with tcpdump installed)", err)
			}
			p, err := Compile(c.expr, linkByName(c.link), 0)
			if err != nil {
				t.Fatal(err)
			}
			if got := p.String(); got != string(want) {
				t.Errorf("program differs from tcpdump's (%s)\ngot:\n%swant:\n%s", path, got, want)
			}
			// The text read back gives the very instructions, jumps and all.
			theirs, err := parseImage(string(want))
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			if !slices.Equal(theirs, withoutUnusedK(p.Raw())) {
				t.Errorf("%s read back differs from the program", path)
			}
		})
	}
}

// withoutUnusedK clears k where an instruction does not use it and tcpdump
// -d does not print it: libpcap leaves the word of an "ldx M[k]" the
// optimizer made a "tax" in k, and so do we (TestRawAgainstTcpdump).
func withoutUnusedK(raw []bpf.RawInstruction) []bpf.RawInstruction {
	for i := range raw {
		c := int32(raw[i].Op)
		if bpfClass(c) == bpfMISC || bpfClass(c) == bpfALU && (bpfSrc(c) == bpfX || bpfOp(c) == bpfNEG) ||
			bpfClass(c) == bpfJMP && bpfOp(c) != bpfJA && bpfSrc(c) == bpfX || c == bpfRET|bpfA || c == bpfLD|bpfLEN {
			raw[i].K = 0
		}
	}
	return raw
}

// TestRawAgainstTcpdump compares each golden program with tcpdump -ddd's,
// every field of every instruction, when tcpdump is installed.
func TestRawAgainstTcpdump(t *testing.T) {
	td := tcpdumpPath(t)
	dir := t.TempDir()
	for _, c := range goldenCases {
		args := []string{"-ddd", "-y", c.link, "--", c.expr}
		if l := linkByName(c.link); l == layers.LinkTypeNull || l == layers.LinkTypeLoop {
			args = []string{"-ddd", "-r", writePcap(t, dir, l, nil), "--", c.expr}
		}
		out, err := exec.Command(td, args...).Output()
		if err != nil {
			t.Fatalf("tcpdump %q: %v", args, err)
		}
		want, err := ParseRaw(string(out))
		if err != nil {
			t.Fatalf("%s %q: %v", c.link, c.expr, err)
		}
		p, err := Compile(c.expr, linkByName(c.link), 0)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(p.Raw(), want) {
			t.Errorf("%s %q: instructions differ from tcpdump -ddd's:\n%v\n%v", c.link, c.expr, p.Raw(), want)
		}
	}
}

// verdictExprs are run on every link type and compared with what
// "tcpdump -r" selects from the same file: the golden expressions and more.
func verdictExprs() []string {
	var es []string
	for _, c := range goldenCases {
		es = append(es, c.expr)
	}
	es = append(es,
		"src or dst host 10.0.0.2", "ip host 10.0.0.1", "ip6 host 2001:db8::2", "ip6 net 2001:db8::/48",
		"net 10", "net 172.16.0.0/12 or net 192.168.0.0/16", "port 65535", "portrange 5-2",
		"src and dst port 22", "udp src port 53 or udp dst port 53", "tcp src portrange 9000-9200",
		"not tcp", "not ip and not ip6", "vlan 30 and vlan 10 and tcp", "vlan 4095", "vlan 10 and udp",
		"vlan and host 10.0.0.1", "not vlan", "ip and not ip", "host 10.0.0.1 or tcp or 8.8.8.8 and not port 80",
		"port 1 or 2 or 3 and 9092", "(tcp or udp) and (port 53 or 9092)", "dst port 9092 or dst port 9093",
		"ip6 or port 9092 and ip", "tcp and port 9092 or vlan", "not (port 9092 or 9093)",
		"src net 2001:db8::/32 and dst net 2001:db9::/32", "host 10.0.0.3 and not port 22",
		Default([]uint16{9092}), Default([]uint16{9092, 9093, 9094, 19092}), Default(nil),
		"tcp[13] & tcp-syn != 0", "tcp[13] = tcp-syn|tcp-ack", "tcp[tcpflags] & tcp-fin != 0",
		"tcp[((tcp[12:1] & 0xf0) >> 2):4] = 0x504f5354", "tcp[12] >> 4 > 5", "not tcp[13] & 2 != 0",
		"udp[4:2] > 100", "ip[8] = 1", "ip[1] & 0xfc = 0x10", "greater 1000", "less 60", "len = 74",
		"len >= 60 and len < 80", "icmp[icmptype] = icmp-echoreply", "icmp[icmptype] != icmp-echo",
		"icmp6[icmp6type] = icmp6-neighborsolicit", "ip6[40] = 135", "ip6[6] = 58 and ip6[40] = 128",
		"sctp[0:2] = 9092", "rarp[7] = 4", "arp[6:2] = 1", "ether[12:2] = 0x8100", "vlan 10 and ip[9] = 6",
		"ip[0] / 0x10 = 4", "ip[0] % 16 = 5", "tcp[13] ^ 0x18 = 0", "-ip[0] = -69", "ip[0] - 4 = 0x41",
		"tcp[0:2] - tcp[2:2] = 0", "ether[len - 1] = 0x0a", "ip[len - 15] = 0", "icmp or less 60",
		"ip[6] & 0x20 != 0 or ip[6:2] & 0x1fff != 0", "ip[2:2] + 14 = len", "udp[0] = udp[1]",
		"tcp[13] = 2 or tcp[13] = 0x12 or tcp[13] = 0x10", "host 10.0.0.1 and ip[8] > 60",
		"not (ip[8] > 60 or ip6[7] > 60)", "ip[2:2] > 576", "ip[100] = 1 or ip[9] = 6", "icmp6 and ip6[40] = 128", "arp or rarp or sctp",
		"tcp[0] + udp[0] > 0", "len * 0 = 1", "1 = 2", "len - len = 0", "ip[ip[0] & 0xf] = 4",
		"ether[0:4] = 0x02000000 and ether[4:2] = 0x0002", "ip[0] & 0xf0 = 0x40 and ip[0] & 0x0f > 5",
	)
	slices.Sort(es)
	return slices.Compact(es)
}

// tcpdumpMatches returns the frames (0-based) tcpdump -r selects, read
// from the -tt timestamps (frame i is stamped i seconds). ok is false
// when tcpdump refused the expression; msg is its message.
func tcpdumpMatches(t *testing.T, td, file, link, expr string) (m map[int]bool, ok bool, msg string) {
	cmd := exec.Command(td, "-r", file, "-nn", "-tt", "--", expr)
	out, err := cmd.Output()
	if err != nil {
		var stderr string
		if ee, isExit := err.(*exec.ExitError); isExit {
			stderr = strings.TrimSpace(string(ee.Stderr))
		}
		return nil, false, stderr
	}
	m = map[int]bool{}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	re := regexp.MustCompile(`^(\d+)\.000000 `)
	for sc.Scan() {
		if s := re.FindStringSubmatch(sc.Text()); s != nil {
			i, _ := strconv.Atoi(s[1])
			m[i] = true
		}
	}
	return m, true, ""
}

// TestVerdictsAgainstTcpdump writes the packet set for each link type and
// requires Program.Match to select exactly the frames tcpdump selects, for
// every expression. The x/net/bpf VM must agree with Match too.
func TestVerdictsAgainstTcpdump(t *testing.T) {
	td := tcpdumpPath(t)
	dir := t.TempDir()
	exprs := verdictExprs()
	compared := 0
	for _, l := range testLinks {
		frames, names := framesFor(l.link)
		file := writePcap(t, dir, l.link, frames)
		for _, expr := range exprs {
			p, cerr := Compile(expr, l.link, 0)
			want, ok, msg := tcpdumpMatches(t, td, file, l.name, expr)
			switch {
			case cerr != nil && !ok:
				continue // both refuse (vlan off Ethernet)
			case cerr != nil:
				t.Errorf("%s %q: Compile: %v; tcpdump accepts it", l.name, expr, cerr)
				continue
			case !ok && strings.Contains(msg, "rejects all packets"):
				if !p.MatchesNothing() {
					t.Errorf("%s %q: tcpdump says %q, our program:\n%s", l.name, expr, msg, p)
				}
				continue
			case !ok:
				t.Errorf("%s %q: tcpdump refuses it (%s), Compile accepts it", l.name, expr, msg)
				continue
			}
			vm, err := bpf.NewVM(p.Instructions())
			if err != nil {
				t.Fatalf("%s %q: NewVM: %v", l.name, expr, err)
			}
			// x/net/bpf's VM does not implement "neg".
			hasNeg := strings.Contains(p.String(), " neg ")
			for i, f := range frames {
				got := p.Match(f)
				if got != want[i] {
					t.Errorf("%s %q: frame %d (%s): Match %v, tcpdump %v\n%s", l.name, expr, i, names[i], got, want[i], p)
				}
				if hasNeg {
					continue
				}
				if n, err := vm.Run(f); err != nil || (n != 0) != got {
					t.Errorf("%s %q: frame %d (%s): x/net/bpf VM %d %v, Match %v", l.name, expr, i, names[i], n, err, got)
				}
			}
			compared++
		}
	}
	t.Logf("%d expression × link type pairs compared with tcpdump -r on %d packets", compared, len(packetSet()))
}

// TestLoopbackIPv6Families: on NULL and LOOP links ip6 is any of the
// AF_INET6 values of BSD, FreeBSD and macOS, as tcpdump reading a file
// has it; Linux's 10 is not one of them.
func TestLoopbackIPv6Families(t *testing.T) {
	pkt := packetSet()[16].ip // v6 tcp to 9092
	for _, fam := range []uint32{10, 24, 28, 30} {
		for _, link := range []layers.LinkType{layers.LinkTypeNull, layers.LinkTypeLoop} {
			h := make([]byte, 4)
			if link == layers.LinkTypeNull {
				h[0] = byte(fam)
			} else {
				h[3] = byte(fam)
			}
			f := append(h, pkt...)
			for _, expr := range []string{"ip6", "tcp port 9092", Default([]uint16{9092})} {
				p, err := Compile(expr, link, 0)
				if err != nil {
					t.Fatal(err)
				}
				if got, want := p.Match(f), fam != 10; got != want {
					t.Errorf("link %d family %d: %q matches %v, want %v", link, fam, expr, got, want)
				}
			}
		}
	}
}
