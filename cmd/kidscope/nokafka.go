package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/kidscope/kidscope/reassembly"
	"github.com/kidscope/kidscope/report"
	"github.com/kidscope/kidscope/result"
)

// noKafka reports whether a run decoded no Kafka message: nothing was
// checked, whatever the exit code of the findings says.
func noKafka(sum *result.Summary) bool { return sum.Requests+sum.Responses == 0 }

// warnNoKafka says on stderr, in one line, what a run that decoded no
// Kafka saw instead, so that a wrong --port does not pass for a clean
// capture. It returns whether there was no Kafka. kernel is the filter a
// live capture ran in the kernel ("" for files).
func warnNoKafka(sum *result.Summary, ports reassembly.Ports, kernel string) bool {
	if !noKafka(sum) {
		return false
	}
	line := noKafkaLine(sum, ports)
	if kernel != "" && sum.Capture.Packets == 0 {
		// The kernel kept every other packet from live: there is
		// nothing to count.
		line = fmt.Sprintf("no Kafka decoded: no packet matched the capture filter %q (-p or --filter widen it)", kernel)
	}
	fmt.Fprintln(os.Stderr, "kidscope:", report.SafeText(line))
	return true
}

// noKafkaLine is that line: "no Kafka decoded: 412 TCP packets, none on
// broker port 9092; the busiest TCP ports: 29092 (380 packets, looks like
// Kafka); try -p 29092 or -p auto". Only numbers come from the capture.
func noKafkaLine(sum *result.Summary, ports reassembly.Ports) string {
	c := sum.Capture
	var b strings.Builder
	b.WriteString("no Kafka decoded: ")
	filtered := ""
	if c.Filtered > 0 {
		filtered = fmt.Sprintf(" (and %s left out by the filter)", count(c.Filtered, "packet", "packets"))
	}
	switch {
	case c.Packets == 0:
		b.WriteString("the input holds no packets")
		return b.String()
	case c.Packets == c.Filtered:
		fmt.Fprintf(&b, "the filter left out all %s", count(c.Packets, "packet", "packets"))
		return b.String()
	case c.TCP == 0:
		fmt.Fprintf(&b, "%s, none TCP%s", count(c.Packets-c.Filtered, "packet", "packets"), filtered)
		return b.String()
	case sum.Connections > 0:
		fmt.Fprintf(&b, "%s on %s carried no Kafka message", count(sum.Connections, "connection", "connections"), portsText(ports))
		if sum.NotKafka > 0 {
			fmt.Fprintf(&b, " (%d not Kafka: TLS without --tls-keylog, or another protocol)", sum.NotKafka)
		}
	case sum.Reassembly.Segments > 0:
		fmt.Fprintf(&b, "%s, %d on %s, with no data", count(c.TCP, "TCP packet", "TCP packets"), sum.Reassembly.Segments, portsText(ports))
	default:
		fmt.Fprintf(&b, "%s, none on %s", count(c.TCP, "TCP packet", "TCP packets"), portsText(ports))
	}
	b.WriteString(filtered)
	if len(sum.OtherPorts) > 0 {
		b.WriteString("; the busiest TCP ports: ")
		for i, p := range sum.OtherPorts {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "%d (%s", p.Port, count(p.Packets, "packet", "packets"))
			if p.Kafka {
				b.WriteString(", looks like Kafka")
			}
			b.WriteString(")")
		}
	}
	switch {
	case len(sum.KafkaPorts) > 0:
		list := make([]string, len(sum.KafkaPorts))
		for i, p := range sum.KafkaPorts {
			list[i] = strconv.Itoa(int(p.Port))
		}
		fmt.Fprintf(&b, "; try -p %s or -p auto", strings.Join(list, ","))
	case len(sum.OtherPorts) > 0:
		b.WriteString("; none looks like Kafka (-p PORT decodes another port, -p auto every one)")
	}
	return b.String()
}

// portsText names the broker ports: "broker port 9092", "broker ports
// 9092-9094, 19092", "any port (-p auto)".
func portsText(p reassembly.Ports) string {
	if p.Auto {
		return "any port (-p auto)"
	}
	list := p.List()
	var parts []string
	for i := 0; i < len(list); {
		j := i
		for j+1 < len(list) && list[j+1] == list[j]+1 {
			j++
		}
		if j > i {
			parts = append(parts, fmt.Sprintf("%d-%d", list[i], list[j]))
		} else {
			parts = append(parts, strconv.Itoa(int(list[i])))
		}
		i = j + 1
	}
	if len(parts) > 4 {
		parts = append(parts[:4], fmt.Sprintf("and %d more", len(parts)-4))
	}
	if len(list) == 1 {
		return "broker port " + parts[0]
	}
	return "broker ports " + strings.Join(parts, ", ")
}

func count(n int64, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
