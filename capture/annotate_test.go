package capture

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/gopacket/gopacket/layers"
)

// annotated is what a test reads back out of an annotated copy, walking
// its blocks by hand: the comments of each frame, of the first section
// header, where the decryption secrets blocks are.
type annotated struct {
	section []string
	frames  map[int64][]string
	// order of the blocks: "S" section, "I" interface, "D" secrets, "F"
	// frame, "?" other.
	layout string
}

func readAnnotated(t *testing.T, path string) annotated {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	br := bufio.NewReader(f)
	a := annotated{frames: map[int64][]string{}}
	var order ngOrder
	var frame int64
	comments := func(b []byte, at int) (out []string) {
		for at+4 <= len(b)-4 {
			code, n := order.Uint16(b[at:]), int(order.Uint16(b[at+2:]))
			if code == optEnd {
				break
			}
			if code == optComment {
				out = append(out, string(b[at+4:at+4+n]))
			}
			at += 4 + (n+3)&^3
		}
		return out
	}
	for {
		b, o, err := ngBlock(br, order, nil)
		if err == io.EOF {
			return a
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		order = o
		switch typ := order.Uint32(b); {
		case typ == ngSHB:
			a.layout += "S"
			if a.section == nil {
				a.section = comments(b, 24)
			}
		case typ == ngIDB:
			a.layout += "I"
		case typ == ngDSB:
			a.layout += "D"
		case isFrame(typ):
			a.layout += "F"
			frame++
			if typ == ngEPB {
				if c := comments(b, 28+(int(order.Uint32(b[20:24]))+3)&^3); c != nil {
					a.frames[frame] = c
				}
			}
		default:
			a.layout += "?"
		}
	}
}

// timed reads a capture with the Reader: each packet as describe has it,
// with its time and wire length.
func timed(t *testing.T, path string) []string {
	t.Helper()
	r, err := Open([]string{path}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var out []string
	var p Packet
	for {
		err := r.Next(&p)
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%s %s %d", describe(&p), p.Time.UTC().Format("15:04:05.999999999"), p.WireLength))
	}
}

func TestAnnotate(t *testing.T) {
	frame := func(i int) []byte {
		return ether(t, seg{src: "10.0.0.1", dst: "10.0.0.2", sport: 40000, dport: 9092, seq: uint32(i), payload: fmt.Sprint("frame ", i)}.ip4(t))
	}
	three := recs(frame(1), frame(2), frame(3))
	three[1].wire = len(three[1].data) + 10  // cut by a snap length
	three[2].ts = three[2].ts.Add(123456789) // nanoseconds that microseconds keep 123456 of

	// A big-endian pcapng that has its own comments and secrets, and a
	// custom block (a frame for Wireshark) and a simple packet block
	// (which holds no options) among its frames.
	ng := &ngWriter{}
	ng.shb(binary.BigEndian)
	ng.idb(layers.LinkTypeEthernet, 65535)
	ng.block(ngDSB, append(binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(nil, SecretsTLSKeyLog), 12), "SECRET-LINE\n"...))
	ng.epb(qrec{data: frame(1), orig: len(frame(1))})
	ng.block(ngCustom, make([]byte, 8))
	ng.block(ngSPB, append(binary.BigEndian.AppendUint32(nil, uint32(len(frame(2)))), frame(2)...))
	ng.n++
	own := ng.option(optComment, []byte("the capturer's own"))
	ts := uint64(qtime(ng.n).UnixNano())
	body := binary.BigEndian.AppendUint32(nil, 0)
	body = binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(body, uint32(ts>>32)), uint32(ts))
	f4 := frame(4)
	body = binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(body, uint32(len(f4))), uint32(len(f4)))
	body = append(body, f4...)
	body = append(body, make([]byte, (4-len(f4)%4)%4)...)
	body = append(append(body, own...), 0, 0, 0, 0)
	ng.block(ngEPB, body)
	ngFile := ng.b.Bytes()

	tests := []struct {
		name    string
		file    []byte
		secrets bool
		frames  map[int64][]string
		want    map[int64][]string
		layout  string
		// uncommented counts the frames asked for that hold no comment.
		uncommented int64
	}{
		{name: "pcap", file: pcapBytes(t, layers.LinkTypeEthernet, false, three),
			frames: map[int64][]string{2: {"kidscope a", "kidscope b"}}, want: map[int64][]string{2: {"kidscope a", "kidscope b"}}, layout: "SIFFF"},
		{name: "pcap nanoseconds", file: pcapBytes(t, layers.LinkTypeEthernet, true, three),
			frames: map[int64][]string{1: {"x"}, 3: {"y"}, 9: {"past the end"}}, want: map[int64][]string{1: {"x"}, 3: {"y"}}, layout: "SIFFF", uncommented: 1},
		{name: "pcap big-endian", file: pcapBigEndian(layers.LinkTypeEthernet, false, three),
			frames: map[int64][]string{3: {"z"}}, want: map[int64][]string{3: {"z"}}, layout: "SIFFF"},
		{name: "pcap gzip", file: gzipBytes(t, pcapBytes(t, layers.LinkTypeEthernet, false, three)),
			frames: map[int64][]string{1: {"g"}}, want: map[int64][]string{1: {"g"}}, layout: "SIFFF"},
		{name: "pcapng secrets left out", file: ngFile,
			frames: map[int64][]string{1: {"one"}, 3: {"simple"}, 4: {"four"}},
			want:   map[int64][]string{1: {"one"}, 4: {"the capturer's own", "four"}}, layout: "SIFFFF", uncommented: 1},
		{name: "pcapng secrets kept ahead", file: ngFile, secrets: true,
			frames: map[int64][]string{2: {"custom"}},
			want:   map[int64][]string{4: {"the capturer's own"}}, layout: "SDIFFFF", uncommented: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			in := writeFile(t, dir, "in", tc.file)
			out := filepath.Join(dir, "out.pcapng")
			st, err := Annotate(in, out, AnnotateOptions{Section: "kidscope test", Frames: tc.frames, Secrets: tc.secrets})
			if err != nil {
				t.Fatal(err)
			}
			a := readAnnotated(t, out)
			if !reflect.DeepEqual(a.frames, tc.want) {
				t.Errorf("comments %v, want %v", a.frames, tc.want)
			}
			if a.layout != tc.layout {
				t.Errorf("blocks %s, want %s", a.layout, tc.layout)
			}
			if !reflect.DeepEqual(a.section, []string{"kidscope test"}) {
				t.Errorf("section comments %q", a.section)
			}
			if st.Uncommented != tc.uncommented {
				t.Errorf("uncommented %d, want %d", st.Uncommented, tc.uncommented)
			}
			b, _ := os.ReadFile(out)
			if got := bytes.Contains(b, []byte("SECRET-LINE")); got != tc.secrets {
				t.Errorf("secrets in the copy: %v", got)
			}
			// The same frames at the same times, as the Reader reads them.
			if got, want := timed(t, out), timed(t, in); !reflect.DeepEqual(got, want) {
				t.Errorf("frames differ:\n%q\nwant\n%q", got, want)
			}
			if fi, _ := os.Stat(out); fi.Mode().Perm() != 0o600 {
				t.Errorf("mode %v", fi.Mode())
			}
		})
	}
}

// TestAnnotateOutputExists: a copy is created as live --write creates its
// files: an existing file is refused unless Force, a symbolic link always.
func TestAnnotateOutputExists(t *testing.T) {
	dir := t.TempDir()
	in := writeFile(t, dir, "in.pcap", pcapBytes(t, layers.LinkTypeEthernet, false, recs([]byte{1, 2, 3})))
	out := writeFile(t, dir, "out.pcapng", []byte("old"))
	var ee *ExistsError
	if _, err := Annotate(in, out, AnnotateOptions{}); !errors.As(err, &ee) {
		t.Fatalf("existing file: %v", err)
	}
	if _, err := Annotate(in, out, AnnotateOptions{Force: true}); err != nil {
		t.Fatalf("with Force: %v", err)
	}
	link := filepath.Join(dir, "link.pcapng")
	if err := os.Symlink(out, link); err != nil {
		t.Fatal(err)
	}
	if _, err := Annotate(in, link, AnnotateOptions{Force: true}); !errors.As(err, &ee) || ee.Kind == "" {
		t.Fatalf("symbolic link: %v", err)
	}
	if _, err := Annotate(writeFile(t, dir, "text", []byte("hello world")), filepath.Join(dir, "x"), AnnotateOptions{}); err == nil {
		t.Fatal("not a capture: no error")
	}
}

// FuzzAnnotate: whatever the input, Annotate returns (an error or not) and
// what it writes of a pcapng input walks as blocks.
func FuzzAnnotate(f *testing.F) {
	ng := &ngWriter{}
	ng.shb(binary.LittleEndian)
	ng.idb(layers.LinkTypeEthernet, 65535)
	ng.epb(qrec{data: []byte{1, 2, 3, 4, 5}, orig: 5})
	f.Add(ng.b.Bytes())
	f.Add(pcapRaw(65535, 1, whole([]byte{1, 2, 3})))
	f.Fuzz(func(t *testing.T, b []byte) {
		dir := t.TempDir()
		in := filepath.Join(dir, "in")
		if err := os.WriteFile(in, b, 0o600); err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(dir, "out")
		if _, err := Annotate(in, out, AnnotateOptions{Section: "s", Frames: map[int64][]string{1: {"c"}, 2: {"d"}}, Secrets: true}); err != nil {
			return
		}
		readAnnotated(t, out)
	})
}

// TestReaderComments: the Reader reads the section comments of a pcapng
// input (an annotated copy's), for the report's summary; a pcap has none.
func TestReaderComments(t *testing.T) {
	dir := t.TempDir()
	pcap := writeFile(t, dir, "in.pcap", pcapBytes(t, layers.LinkTypeEthernet, false, recs([]byte{1, 2, 3})))
	out := filepath.Join(dir, "out.pcapng")
	long := string(bytes.Repeat([]byte("x"), 5000))
	if _, err := Annotate(pcap, out, AnnotateOptions{Section: long}); err != nil {
		t.Fatal(err)
	}
	r, err := Open([]string{pcap, out}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	got := r.Comments()
	if len(got) != 1 || got[0].File != 1 || got[0].Text != long[:maxCommentBytes] {
		t.Fatalf("comments %d: %+v", len(got), got)
	}
}
