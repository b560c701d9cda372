package capture

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/gopacket/gopacket/pcapgo"
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

// TestPcapRecordsMatchPcapgo reads classic pcap files three ways: record
// by record with pcapRecords, with mappedRecords and with pcapgo's reader;
// and through Open as a file (mapped) and on stdin (pcapRecords). Whole,
// cut at many offsets (inside a record's header and inside its data), with
// a record longer than the read buffer and with one longer than the snap
// length: all must give the same records and end the same way, and both
// Readers list the same packets, counters and problems.
func TestPcapRecordsMatchPcapgo(t *testing.T) {
	var inputs [][]byte
	for _, name := range []string{"kgo-admin-kfake.pcap", "kgo-consumer-classic-kfake.pcap"} {
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
	for i, in := range inputs {
		format, _, err := pcapHeader(in[:24])
		if err != nil {
			t.Fatal(err)
		}
		// pcapgo reads through a buffer of its own; what it has taken
		// tells a clean end from one inside a record (it reports both as
		// io.EOF).
		rest := bytes.NewReader(in)
		buffered := bufio.NewReaderSize(rest, bufferSize)
		viaPcapgo, err := pcapgo.NewReader(buffered)
		if err != nil {
			t.Fatal(err)
		}
		taken := func() int { return len(in) - rest.Len() - buffered.Buffered() }
		want := listRecords(viaPcapgo, taken)
		ours := map[string]packetSource{
			"pcapRecords":   &pcapRecords{pcapFormat: format, br: bufio.NewReaderSize(bytes.NewReader(in[24:]), bufferSize)},
			"mappedRecords": &mappedRecords{pcapFormat: format, m: &mapping{data: in}, off: 24, read: new(atomic.Int64)},
		}
		for name, r := range ours {
			if got := listRecords(r, nil); got != want {
				t.Errorf("input %d (%d bytes): %s differs from pcapgo\nours:\n%s\npcapgo:\n%s", i, len(in), name, got, want)
			}
		}

		path := filepath.Join(dir, fmt.Sprintf("in%d.pcap", i))
		if err := os.WriteFile(path, in, 0o644); err != nil {
			t.Fatal(err)
		}
		fromFile, err := Open([]string{path}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := fromFile.srcs[0].pr.(*mappedRecords); !ok {
			t.Fatalf("input %d: the file is not read through a mapping", i)
		}
		fromStdin, err := Open([]string{"-"}, bytes.NewReader(in))
		if err != nil {
			t.Fatal(err)
		}
		if a, b := listPackets(t, fromFile), listPackets(t, fromStdin); a != b {
			t.Errorf("input %d: the mapped file and stdin differ\nfile:\n%s\nstdin:\n%s", i, a, b)
		} else if i == 0 && !strings.Contains(a, "seq=") {
			t.Fatal("the real capture gave no packets")
		}
	}
}

// listRecords lists each record r gives and how it ends. taken, when set,
// is how many bytes r has taken: an io.EOF after taking some is an end
// inside a record.
func listRecords(r packetSource, taken func() int) string {
	var b strings.Builder
	for {
		before := 0
		if taken != nil {
			before = taken()
		}
		data, ci, err := r.ZeroCopyReadPacketData()
		if err != nil {
			if err == io.EOF && taken != nil && taken() != before {
				err = io.ErrUnexpectedEOF
			}
			fmt.Fprintf(&b, "end: %v\n", err)
			return b.String()
		}
		fmt.Fprintf(&b, "%s %d %d %x\n", ci.Timestamp.Format("15:04:05.000000000"), ci.CaptureLength, ci.Length, data)
	}
}

// TestPcapRecordsBytesRead checks the progress counter ends at the file size.
func TestPcapRecordsBytesRead(t *testing.T) {
	path := filepath.Join("..", "testdata", "real", "kgo-admin-kfake.pcap")
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
