package gopacketref

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/gopacket/gopacket/layers"
)

// Ports is the set of broker ports, or Auto for any port.
type Ports struct {
	Auto bool
	set  *[65536 / 64]uint64
}

// DefaultPorts is Kafka's port, 9092.
func DefaultPorts() Ports {
	p, _ := ParsePorts([]string{"9092"})
	return p
}

// ParsePorts reads port specs: numbers, ranges ("9092-9094"), lists
// separated by commas, or "auto".
func ParsePorts(specs []string) (Ports, error) {
	p := Ports{set: new([1024]uint64)}
	for _, spec := range specs {
		for _, part := range strings.Split(spec, ",") {
			part = strings.TrimSpace(part)
			if part == "auto" {
				p.Auto = true
				continue
			}
			lo, hi, isRange := strings.Cut(part, "-")
			a, err := parsePort(lo)
			if err != nil {
				return p, fmt.Errorf("port %q: %w", part, err)
			}
			b := a
			if isRange {
				if b, err = parsePort(hi); err != nil {
					return p, fmt.Errorf("port range %q: %w", part, err)
				}
				if b < a {
					return p, fmt.Errorf("port range %q runs backwards", part)
				}
			}
			for q := a; q <= b; q++ {
				p.set[q/64] |= 1 << (q % 64)
			}
		}
	}
	return p, nil
}

func parsePort(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > 65535 {
		return 0, fmt.Errorf("not a port number (1-65535)")
	}
	return n, nil
}

// Has reports whether port is a broker port.
func (p Ports) Has(port uint16) bool {
	return p.set != nil && p.set[port/64]&(1<<(port%64)) != 0
}

// carries reports whether a segment between these ports is on a broker
// port (with Auto, every segment is).
func (p Ports) carries(src, dst uint16) bool {
	return p.Auto || p.Has(src) || p.Has(dst)
}

// brokerIsDst decides the broker side of a new connection from its first
// segment: the broker port; with Auto (or both ports listed), the receiver
// of a SYN, the sender of a SYN/ACK, or else the lower port, since clients
// connect from ephemeral ports.
func (p Ports) brokerIsDst(tcp *layers.TCP) bool {
	src, dst := p.Has(uint16(tcp.SrcPort)), p.Has(uint16(tcp.DstPort))
	if src != dst {
		return dst
	}
	switch {
	case tcp.SYN && !tcp.ACK:
		return true
	case tcp.SYN && tcp.ACK:
		return false
	}
	return tcp.DstPort <= tcp.SrcPort
}

// List returns the ports in the set, ascending (none for Auto alone).
func (p Ports) List() []uint16 {
	var out []uint16
	if p.set == nil {
		return nil
	}
	for q := 1; q <= 65535; q++ {
		if p.Has(uint16(q)) {
			out = append(out, uint16(q))
		}
	}
	return out
}
