package capture

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// listPackets lists every packet and problem of r as text, the file names
// replaced by "F" so that a file and the same bytes on stdin compare.
func listPackets(t *testing.T, r *Reader) string {
	t.Helper()
	defer r.Close()
	var b strings.Builder
	var p Packet
	for {
		err := r.Next(&p)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%d %d %s %v %d>%d seq=%d cut=%v wire=%d %x\n", p.File, p.Frame, p.Time.Format("15:04:05.000000000"),
			p.Network, p.TCP.SrcPort, p.TCP.DstPort, p.TCP.Seq, p.Cut, p.WireLength, p.TCP.Payload)
	}
	fmt.Fprintf(&b, "stats %+v\n", r.Stats())
	for _, e := range r.Problems() {
		fmt.Fprintf(&b, "problem %s\n", strings.ReplaceAll(e.Error(), r.Files()[0], "F"))
	}
	return b.String()
}

// TestPcapRecordsMatchPcapgo reads classic pcap files three ways: mapped
// (a file), with pcapRecords (the same bytes on stdin) and with pcapgo's
// reader: whole, cut at many offsets (inside a record's header and inside
// its data), with a record longer than the read buffer and with one longer
// than the snap length, all must list the same packets, counters and
// problems.
func TestPcapRecordsMatchPcapgo(t *testing.T) {
	var inputs [][]byte
	for _, name := range []string{"admin.pcap", "group-classic.pcap"} {
		b, err := os.ReadFile(filepath.Join("..", "testdata", "real", name))
		if err != nil {
			t.Fatal(err)
		}
		inputs = append(inputs, b)
	}
	whole := inputs[0]
	for _, cut := range []int{24, 25, 39, 40, 41, 100, len(whole) / 3, len(whole) / 2, len(whole) - 1} {
		inputs = append(inputs, whole[:cut])
	}
	huge := bytes.Clone(whole[:24+16])
	putUint32LE(huge[24+8:], 1<<20) // a captured length past any snap length
	inputs = append(inputs, huge)
	// A record longer than the read buffer, whole and cut.
	long := bytes.Clone(whole[:24])
	putUint32LE(long[16:], 1<<20) // snap length
	rec := make([]byte, 16+bufferSize+5000)
	putUint32LE(rec[8:], bufferSize+5000)
	putUint32LE(rec[12:], bufferSize+5000)
	long = append(long, rec...)
	long = append(long, whole[24:]...)
	inputs = append(inputs, long, long[:24+16+bufferSize+100])
	dir := t.TempDir()
	defer func() { classicViaPcapgo = false }()
	type way struct {
		name             string
		stdin, viaPcapgo bool
	}
	ways := []way{{"mapped", false, false}, {"pcapRecords", true, false}, {"pcapgo", false, true}}
	for i, in := range inputs {
		path := filepath.Join(dir, fmt.Sprintf("in%d.pcap", i))
		if err := os.WriteFile(path, in, 0o644); err != nil {
			t.Fatal(err)
		}
		var lists [3]string
		for k, w := range ways {
			classicViaPcapgo = w.viaPcapgo
			var r *Reader
			var err error
			if w.stdin {
				r, err = Open([]string{"-"}, bytes.NewReader(in))
			} else {
				r, err = Open([]string{path}, nil)
			}
			if err != nil {
				t.Fatalf("input %d, %s: %v", i, w.name, err)
			}
			got := "pcapgo"
			switch r.srcs[0].pr.(type) {
			case *mappedRecords:
				got = "mapped"
			case *pcapRecords:
				got = "pcapRecords"
			}
			if got != w.name {
				t.Fatalf("input %d: read with %s, want %s", i, got, w.name)
			}
			lists[k] = listPackets(t, r)
		}
		for k := 1; k < len(ways); k++ {
			if lists[k] != lists[0] {
				t.Errorf("input %d (%d bytes): %s differs from %s\n%s:\n%s\n%s:\n%s", i, len(in), ways[k].name, ways[0].name,
					ways[0].name, lists[0], ways[k].name, lists[k])
			}
		}
		if i == 0 && !strings.Contains(lists[0], "seq=") {
			t.Fatal("the real capture gave no packets")
		}
	}
}

// TestPcapRecordsBytesRead checks the progress counter ends at the file size.
func TestPcapRecordsBytesRead(t *testing.T) {
	path := filepath.Join("..", "testdata", "real", "admin.pcap")
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Open([]string{path}, nil)
	if err != nil {
		t.Fatal(err)
	}
	listPackets(t, r)
	if got := r.BytesRead(); got != st.Size() {
		t.Errorf("BytesRead = %d, want the file size %d", got, st.Size())
	}
}

func putUint32LE(b []byte, v uint32) {
	b[0], b[1], b[2], b[3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
}
