package capture

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
)

// readNg reads a Recorder's file back with pcapgo: its interface, the
// number of frames, and the interface statistics block at its end.
func readNg(t *testing.T, path string) (pcapgo.NgInterface, int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := pcapgo.NewNgReader(f, pcapgo.DefaultNgReaderOptions)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	n := 0
	for {
		if _, _, err := r.ReadPacketData(); err != nil {
			break
		}
		n++
	}
	intf, err := r.Interface(0)
	if err != nil {
		t.Fatal(err)
	}
	return intf, n
}

// TestRecorderRing: with MaxFiles and size rotation, exactly the newest
// MaxFiles files remain, each 0600 and a pcapng that names the interface
// and the filter and ends with the capture's statistics.
func TestRecorderRing(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "x.pcapng")
	r, err := NewRecorder(path, layers.LinkTypeEthernet, 65535, RecordOptions{MaxSize: 300, MaxFiles: 3,
		Interface: "eth7", Filter: "tcp port 9092", Start: t0})
	if err != nil {
		t.Fatal(err)
	}
	var written int64
	r.SetStats(func() (int64, int64) { return written + 5, 5 })
	for i := 0; i < 8; i++ {
		ci, data := recordFrame(t, strings.Repeat("r", 200))
		ci.Timestamp = t0.Add(time.Duration(i) * time.Second)
		if _, _, err := r.Write(ci, data); err != nil {
			t.Fatal(err)
		}
		written++
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	names, _ := filepath.Glob(filepath.Join(dir, "*"))
	want := []string{path, filepath.Join(dir, "x-2.pcapng"), filepath.Join(dir, "x-3.pcapng")}
	slices.Sort(names)
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Fatalf("files %v, want %v", names, want)
	}
	// One frame a file: 8 files made, the last three (6, 7, 8) kept.
	if got := len(r.Files()); got != 8 {
		t.Errorf("%d file indexes, want 8", got)
	}
	for _, f := range names {
		if m := modeOf(t, f); m != 0o600 {
			t.Errorf("%s has mode %v", f, m)
		}
		intf, n := readNg(t, f)
		if intf.Name != "eth7" || intf.Filter != "tcp port 9092" || n != 1 {
			t.Errorf("%s: interface %q filter %q, %d frames", filepath.Base(f), intf.Name, intf.Filter, n)
		}
		st := intf.Statistics
		if st.PacketsDropped != 5 || st.PacketsReceived < 5+5 || !st.StartTime.Equal(t0) || st.EndTime.Before(t0.Add(5*time.Second)) {
			t.Errorf("%s: statistics %+v", filepath.Base(f), st)
		}
		if tshark, err := exec.LookPath("tshark"); err == nil {
			out, err := exec.Command(tshark, "-r", f, "-q", "-z", "io,stat,0").CombinedOutput()
			if err != nil {
				t.Errorf("tshark -r %s: %v: %s", f, err, out)
			}
		}
	}
	// x.pcapng was made last for the 7th frame: 6 received before it.
	if intf, _ := readNg(t, path); intf.Statistics.PacketsReceived != 7+5 {
		t.Errorf("x.pcapng: received %d, want 12 (7 frames written before it closed, 5 dropped)", intf.Statistics.PacketsReceived)
	}
}

// TestRecorderRotateEvery: time rotation follows the frames' timestamps
// and the Ticks' times, not the wall clock.
func TestRecorderRotateEvery(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "x.pcapng")
	r, err := NewRecorder(path, layers.LinkTypeEthernet, 65535, RecordOptions{RotateEvery: 10 * time.Second, Start: t0})
	if err != nil {
		t.Fatal(err)
	}
	write := func(sec int) int {
		ci, data := recordFrame(t, "x")
		ci.Timestamp = t0.Add(time.Duration(sec) * time.Second)
		file, _, err := r.Write(ci, data)
		if err != nil {
			t.Fatal(err)
		}
		return file
	}
	tick := func(sec int) {
		if err := r.Tick(t0.Add(time.Duration(sec) * time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	got := []int{write(0), write(9)}
	got = append(got, write(10), write(19)) // the boundary at 10 s
	got = append(got, write(35))            // long after 20 s: a file from 35 s
	tick(44)
	got = append(got, write(44))
	tick(45) // the deadline: rotates, the next frame goes to a new file
	got = append(got, write(46))
	tick(80) // past the deadline at 55 s: rotates
	tick(95) // the new file is empty: no file more
	got = append(got, write(96))
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if want := []int{0, 0, 1, 1, 2, 2, 3, 4}; !slices.Equal(got, want) {
		t.Errorf("files of the frames %v, want %v", got, want)
	}
	if n := len(r.Files()); n != 5 {
		t.Errorf("%d files, want 5: %v", n, r.Files())
	}
}
