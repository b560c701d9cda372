package filter

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/gopacket/gopacket/layers"
	"golang.org/x/net/bpf"
)

// Program is a classic BPF program for one link type: compiled from an
// expression, or given as raw instructions.
type Program struct {
	expr string // "" for a raw program
	link layers.LinkType
	raw  []bpf.RawInstruction
}

// Compile compiles a filter expression for frames of the given link type.
// A matching frame makes the program return snaplen (DefaultSnaplen when
// snaplen <= 0), which a kernel socket filter takes as the number of bytes
// to keep. An empty expression matches everything. An expression that no
// frame of this link type can match (such as "ip6" on raw IPv4) compiles to
// a program that rejects everything, where tcpdump would refuse it: see
// MatchesNothing.
func Compile(expr string, link layers.LinkType, snaplen int) (*Program, error) {
	tree, err := parse(expr)
	if err != nil {
		return nil, err
	}
	return compileTree(expr, tree, link, snaplen)
}

func compileTree(expr string, tree *node, link layers.LinkType, snaplen int) (*Program, error) {
	if snaplen <= 0 {
		snaplen = DefaultSnaplen
	}
	g, err := newGen(link)
	if err != nil {
		return nil, fmt.Errorf("filter %q: %w", expr, err)
	}
	root, err := g.program(tree, uint32(snaplen))
	if err != nil {
		return nil, fmt.Errorf("filter %q: %w", expr, err)
	}
	if err := optimize(&root); err != nil {
		return nil, fmt.Errorf("filter %q: %w", expr, err)
	}
	p := &Program{expr: expr, link: link, raw: emit(root)}
	if err := validate(p.raw); err != nil {
		return nil, fmt.Errorf("filter %q: internal error: %w", expr, err) // a bug here
	}
	return p, nil
}

// FromRaw makes a Program of raw instructions, such as ParseRaw returns,
// after checking them the way the kernel does.
func FromRaw(raw []bpf.RawInstruction) (*Program, error) {
	if err := validate(raw); err != nil {
		return nil, fmt.Errorf("BPF program: %w", err)
	}
	return &Program{raw: slices.Clone(raw)}, nil
}

// Match runs the program on one frame, from its link-layer header on. A
// frame too short for a load is rejected, as the kernel and libpcap do;
// Match never panics and allocates nothing.
func (p *Program) Match(frame []byte) bool { return run(p.raw, frame) != 0 }

// Raw returns the program's instructions, as SO_ATTACH_FILTER takes them.
func (p *Program) Raw() []bpf.RawInstruction { return slices.Clone(p.raw) }

// Instructions returns the program as golang.org/x/net/bpf instructions.
func (p *Program) Instructions() []bpf.Instruction {
	ins, _ := bpf.Disassemble(p.raw)
	return ins
}

// LinkType is the link type the program was compiled for (0 for a raw one).
func (p *Program) LinkType() layers.LinkType { return p.link }

// Expr is the expression the program was compiled from ("" for a raw one).
func (p *Program) Expr() string { return p.expr }

// MatchesNothing reports whether the program rejects every frame: tcpdump
// calls such an expression an error ("expression rejects all packets").
func (p *Program) MatchesNothing() bool {
	return len(p.raw) == 1 && p.raw[0].Op == bpfRET|bpfK && p.raw[0].K == 0
}

// String returns the program as "tcpdump -d" prints it.
func (p *Program) String() string {
	var b strings.Builder
	for i, ins := range p.raw {
		b.WriteString(image(ins, i))
		b.WriteByte('\n')
	}
	return b.String()
}

// image formats one instruction as libpcap's bpf_image does.
func image(ins bpf.RawInstruction, n int) string {
	k := ins.K
	dec := strconv.Itoa(int(int32(k)))
	hex := "0x" + strconv.FormatUint(uint64(k), 16)
	var op, operand string
	switch ins.Op {
	case bpfRET | bpfK:
		op, operand = "ret", "#"+dec
	case bpfRET | bpfA:
		op, operand = "ret", ""
	case bpfLD | bpfW | bpfABS:
		op, operand = "ld", "["+dec+"]"
	case bpfLD | bpfH | bpfABS:
		op, operand = "ldh", "["+dec+"]"
	case bpfLD | bpfB | bpfABS:
		op, operand = "ldb", "["+dec+"]"
	case bpfLD | bpfW | bpfLEN:
		op, operand = "ld", "#pktlen"
	case bpfLD | bpfW | bpfIND:
		op, operand = "ld", "[x + "+dec+"]"
	case bpfLD | bpfH | bpfIND:
		op, operand = "ldh", "[x + "+dec+"]"
	case bpfLD | bpfB | bpfIND:
		op, operand = "ldb", "[x + "+dec+"]"
	case bpfLD | bpfIMM:
		op, operand = "ld", "#"+hex
	case bpfLDX | bpfIMM:
		op, operand = "ldx", "#"+hex
	case bpfLDX | bpfW | bpfLEN:
		op, operand = "ldx", "#pktlen"
	case bpfLDX | bpfB | bpfMSH:
		op, operand = "ldxb", "4*(["+dec+"]&0xf)"
	case bpfLD | bpfMEM:
		op, operand = "ld", "M["+dec+"]"
	case bpfLDX | bpfMEM:
		op, operand = "ldx", "M["+dec+"]"
	case bpfST:
		op, operand = "st", "M["+dec+"]"
	case bpfSTX:
		op, operand = "stx", "M["+dec+"]"
	case bpfJMP | bpfJA:
		op, operand = "ja", strconv.Itoa(n+1+int(k))
	case bpfJMP | bpfJGT | bpfK:
		op, operand = "jgt", "#"+hex
	case bpfJMP | bpfJGE | bpfK:
		op, operand = "jge", "#"+hex
	case bpfJMP | bpfJEQ | bpfK:
		op, operand = "jeq", "#"+hex
	case bpfJMP | bpfJSET | bpfK:
		op, operand = "jset", "#"+hex
	case bpfJMP | bpfJGT | bpfX:
		op, operand = "jgt", "x"
	case bpfJMP | bpfJGE | bpfX:
		op, operand = "jge", "x"
	case bpfJMP | bpfJEQ | bpfX:
		op, operand = "jeq", "x"
	case bpfJMP | bpfJSET | bpfX:
		op, operand = "jset", "x"
	case bpfALU | bpfNEG:
		op, operand = "neg", ""
	case bpfMISC | bpfTAX:
		op, operand = "tax", ""
	case bpfMISC | bpfTXA:
		op, operand = "txa", ""
	default:
		if bpfClass(int32(ins.Op)) == bpfALU {
			name := map[int32]string{bpfADD: "add", bpfSUB: "sub", bpfMUL: "mul", bpfDIV: "div",
				bpfMOD: "mod", bpfAND: "and", bpfOR: "or", bpfXOR: "xor", bpfLSH: "lsh", bpfRSH: "rsh"}[bpfOp(int32(ins.Op))]
			if name != "" {
				op = name
				switch {
				case bpfSrc(int32(ins.Op)) == bpfX:
					operand = "x"
				case name == "and" || name == "or" || name == "xor":
					operand = "#" + hex
				default:
					operand = "#" + dec
				}
				break
			}
		}
		op, operand = "unimp", "0x"+strconv.FormatUint(uint64(ins.Op), 16)
	}
	if bpfClass(int32(ins.Op)) == bpfJMP && bpfOp(int32(ins.Op)) != bpfJA {
		return fmt.Sprintf("(%03d) %-8s %-16s jt %d\tjf %d", n, op, operand, n+1+int(ins.Jt), n+1+int(ins.Jf))
	}
	return fmt.Sprintf("(%03d) %-8s %s", n, op, operand)
}

// ParseRaw reads a program as "tcpdump -ddd" prints it: the number of
// instructions on the first line, then one "code jt jf k" line (decimal)
// for each. Blank lines are ignored; commas may separate the lines (the
// form iptables' bpf match and "tcpdump -ddd | tr '\n' ','" give).
func ParseRaw(s string) ([]bpf.RawInstruction, error) {
	var lines []string
	for _, l := range strings.FieldsFunc(s, func(r rune) bool { return r == '\n' || r == ',' || r == '\r' }) {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) == 0 {
		return nil, errors.New("BPF program: empty")
	}
	n, err := strconv.Atoi(lines[0])
	if err != nil || n <= 0 {
		return nil, fmt.Errorf("BPF program: line 1: instruction count expected, got %q", lines[0])
	}
	if n > maxInstructions {
		return nil, fmt.Errorf("BPF program: %d instructions, more than the %d allowed", n, maxInstructions)
	}
	if len(lines)-1 != n {
		return nil, fmt.Errorf("BPF program: the first line says %d instructions, %d follow", n, len(lines)-1)
	}
	raw := make([]bpf.RawInstruction, n)
	for i, l := range lines[1:] {
		f := strings.Fields(l)
		if len(f) != 4 {
			return nil, fmt.Errorf("BPF program: instruction %d: \"code jt jf k\" expected, got %q", i, l)
		}
		var v [4]uint64
		for j, lim := range [4]int{16, 8, 8, 32} {
			x, err := strconv.ParseUint(f[j], 10, lim)
			if err != nil {
				// k is printed as a signed number by some tools.
				if j == 3 {
					if sx, err2 := strconv.ParseInt(f[j], 10, 32); err2 == nil {
						v[j] = uint64(uint32(int32(sx)))
						continue
					}
				}
				return nil, fmt.Errorf("BPF program: instruction %d: bad number %q", i, f[j])
			}
			v[j] = x
		}
		raw[i] = bpf.RawInstruction{Op: uint16(v[0]), Jt: uint8(v[1]), Jf: uint8(v[2]), K: uint32(v[3])}
	}
	if err := validate(raw); err != nil {
		return nil, fmt.Errorf("BPF program: %w", err)
	}
	return raw, nil
}

// Filter is a capture filter for frames of any link type: an expression
// compiled on first use for each link type it meets (a pcapng file may
// mix several), or one raw program used for all. It is safe for
// concurrent use; finding the program of a link type already seen takes
// no lock and allocates nothing.
type Filter struct {
	expr    string
	tree    *node
	raw     *Program // set for a raw filter
	snaplen int

	mu    sync.Mutex
	progs atomic.Pointer[map[layers.LinkType]compiled]
}

type compiled struct {
	prog *Program
	err  error
}

// New parses expr (tcpdump syntax, the subset this package supports) and
// returns a Filter that compiles it per link type. Syntax errors are
// reported here, as *SyntaxError, and so is what the compiler refuses for
// every link type (a division by zero that only folding constants finds,
// an arithmetic expression too deep for the scratch memory), found by
// compiling for Ethernet; a link type the expression cannot be compiled
// for (vlan on Linux cooked captures) is reported by Program and Errors.
// Its programs return DefaultSnaplen (see WithSnaplen).
func New(expr string) (*Filter, error) {
	tree, err := parse(expr)
	if err != nil {
		return nil, err
	}
	f := &Filter{expr: expr, tree: tree}
	if _, err := f.Program(layers.LinkTypeEthernet); err != nil {
		return nil, err
	}
	return f, nil
}

// NewRaw returns a Filter that runs the given program (from ParseRaw, for
// --bpf-raw) on frames of every link type.
func NewRaw(raw []bpf.RawInstruction) (*Filter, error) {
	p, err := FromRaw(raw)
	if err != nil {
		return nil, err
	}
	return &Filter{raw: p}, nil
}

// WithSnaplen returns the filter with its matching programs returning
// snaplen: the bytes a kernel socket keeps of a frame. A raw filter's
// program says its own, and is returned as it is.
func (f *Filter) WithSnaplen(snaplen int) *Filter {
	if f.raw != nil {
		return f
	}
	return &Filter{expr: f.expr, tree: f.tree, snaplen: snaplen}
}

// String returns the expression, or "(raw BPF)" for a raw filter.
func (f *Filter) String() string {
	if f.raw != nil {
		return "(raw BPF)"
	}
	return f.expr
}

// Program returns the program for frames of the given link type.
func (f *Filter) Program(link layers.LinkType) (*Program, error) {
	if f.raw != nil {
		return f.raw, nil
	}
	if m := f.progs.Load(); m != nil {
		if c, ok := (*m)[link]; ok {
			return c.prog, c.err
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	old := f.progs.Load()
	if old != nil {
		if c, ok := (*old)[link]; ok {
			return c.prog, c.err
		}
	}
	p, err := compileTree(f.expr, f.tree, link, f.snaplen)
	m := make(map[layers.LinkType]compiled, 4)
	if old != nil {
		for k, v := range *old {
			m[k] = v
		}
	}
	m[link] = compiled{p, err}
	f.progs.Store(&m)
	return p, err
}

// Match reports whether the filter accepts a frame of the given link type.
// Frames of a link type the filter cannot be compiled for are rejected
// (Errors says which).
func (f *Filter) Match(link layers.LinkType, frame []byte) bool {
	p, err := f.Program(link)
	if err != nil {
		return false
	}
	return p.Match(frame)
}

// RawFor returns the program for a link type as raw instructions, for a
// kernel socket filter (capture.LiveOptions.Filter).
func (f *Filter) RawFor(link layers.LinkType) ([]bpf.RawInstruction, error) {
	p, err := f.Program(link)
	if err != nil {
		return nil, err
	}
	return p.Raw(), nil
}

// Errors returns, in link-type order, why the filter could not be compiled
// for link types it met; their frames were rejected.
func (f *Filter) Errors() []error {
	m := f.progs.Load()
	if m == nil {
		return nil
	}
	links := make([]layers.LinkType, 0, len(*m))
	for l, c := range *m {
		if c.err != nil {
			links = append(links, l)
		}
	}
	slices.Sort(links)
	errs := make([]error, len(links))
	for i, l := range links {
		errs[i] = (*m)[l].err
	}
	return errs
}

// Default returns kidscope's default filter expression for the broker
// ports: "tcp and (port A or portrange B-C ...)", runs of consecutive ports
// written as ranges. With no ports (any port: --port auto) it is "tcp".
func Default(ports []uint16) string {
	ps := slices.Clone(ports)
	slices.Sort(ps)
	ps = slices.Compact(ps)
	var terms []string
	for i := 0; i < len(ps); {
		j := i
		for j+1 < len(ps) && ps[j+1] == ps[j]+1 {
			j++
		}
		if j == i {
			terms = append(terms, "port "+strconv.Itoa(int(ps[i])))
		} else {
			terms = append(terms, fmt.Sprintf("portrange %d-%d", ps[i], ps[j]))
		}
		i = j + 1
	}
	switch len(terms) {
	case 0:
		return "tcp"
	case 1:
		return "tcp and " + terms[0]
	}
	return "tcp and (" + strings.Join(terms, " or ") + ")"
}
