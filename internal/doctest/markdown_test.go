package doctest

import (
	"reflect"
	"strings"
	"testing"
)

const doc = "# A document\n" + // 1
	"\n" + // 2
	"```\n" + // 3
	"$ kidscope analyze x.pcapng   # exit 1\n" + // 4
	"SUMMARY\n" + // 5
	"...\n" + // 6
	"end\n" + // 7
	"$ kidscope frames \\\n" + // 8
	"    x.pcapng\n" + // 9
	"```\n" + // 10
	"\n" + // 11
	"```sh\n" + // 12
	"$ sudo kidscope live -i eth0\n" + // 13
	"```\n" + // 14
	"- a list\n" + // 15
	"\n" + // 16
	"  ```\n" + // 17
	"  $ kidscope rules\n" + // 18
	"  header-id-changed\n" + // 19
	"  ```\n" + // 20
	"\n" + // 21
	"````text\n" + // 22
	"```\n" + // 23
	"kidscope analyze inside a text block\n" + // 24
	"````\n" // 25

func TestParse(t *testing.T) {
	exs, err := Parse("d.md", doc)
	if err != nil {
		t.Fatal(err)
	}
	type brief struct {
		Line    int
		Command string
		Exit    int
		Want    []string
	}
	var got []brief
	for _, ex := range exs {
		got = append(got, brief{ex.Line, ex.Command, ex.Exit, ex.Want})
	}
	want := []brief{
		{4, "kidscope analyze x.pcapng   # exit 1", 1, []string{"SUMMARY", "...", "end"}},
		{8, "kidscope frames \\\n    x.pcapng", 0, nil},
		{18, "kidscope rules", 0, []string{"header-id-changed"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Parse:\ngot  %+v\nwant %+v", got, want)
	}
}

func TestParseRefuses(t *testing.T) {
	for _, c := range []struct{ name, src, err string }{
		{"a command not marked", "```\nkidscope analyze x.pcap\n```\n", "d.md:2: a command in a block that is no example"},
		{"a command with $ later in the block", "```\noutput\n$ kidscope analyze x.pcap\n```\n", "d.md:3: a command in a block that is no example"},
		{"go run not marked", "```\ngo run ./cmd/kidscope analyze x\n```\n", "d.md:2:"},
		{"exit 0", "```\n$ kidscope rules  # exit 0\n```\n", `d.md:2: "# exit 0" says nothing`},
		{"open block", "text\n```\n$ kidscope rules\n", "d.md:2: the fenced block is not closed"},
		{"continuation past the block", "```\n$ kidscope rules \\\n```\n", "d.md:2: the command goes on past the block"},
	} {
		if _, err := Parse("d.md", c.src); err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("%s: error %v, want %q", c.name, err, c.err)
		}
	}
}

func TestMatch(t *testing.T) {
	for _, c := range []struct {
		want, got string
		ok        bool
	}{
		{"a\nb", "a\nb\n", true},
		{"a\nb", "a\nb  \n\n", true}, // trailing spaces and empty lines do not count
		{"a\nb", "a\nc", false},
		{"a\nb", "a", false},
		{"a", "a\nb", false},
		{"a\n...\nd", "a\nb\nc\nd", true},
		{"a\n...\nd", "a\nd", true}, // an elision may stand for no line
		{"a\n...\nd", "a\nb\nc", false},
		{"...\nc\n...", "a\nb\nc\nd", true},
		{"...\nx\n...", "a\nb\nc\nd", false},
		{"a\n...\nb\n...\nb", "a\nb\nb", true},
		{"a\n...\nb\n...\nb", "a\nb", false},
		{"", "", true},
		{"", "a", false},
		{"...", "", true},
	} {
		if got := Match(Lines(c.want), Lines(c.got)); got != c.ok {
			t.Errorf("Match(%q, %q) = %v", c.want, c.got, got)
		}
	}
}

func TestUpdate(t *testing.T) {
	for _, c := range []struct {
		want, got, out, err string
	}{
		{"a\nb", "a\nc\nd", "a\nc\nd", ""},
		// The start and end keep their sizes, the lines between go.
		{"a\n...\nz", "A\nb\nc\nZ", "A\n...\nZ", ""},
		{"a\nb\n...", "A\nB\nc\nd", "A\nB\n...", ""},
		// A run between elisions stays where got still has it.
		{"a\n...\nm\n...\nz", "A\nb\nm\nc\nZ", "A\n...\nm\n...\nZ", ""},
		{"a\n...\nm\n...\nz", "A\nb\nc\nd\nZ", "", "no longer in the output"},
		// Too short to elide anything: all of it.
		{"a\n...\nz", "A\nZ", "A\nZ", ""},
	} {
		out, err := Update(Lines(c.want), Lines(c.got))
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("Update(%q, %q): error %v, want %q", c.want, c.got, err, c.err)
			}
			continue
		}
		if err != nil || strings.Join(out, "\n") != c.out {
			t.Errorf("Update(%q, %q) = %q, %v; want %q", c.want, c.got, strings.Join(out, "\n"), err, c.out)
		}
		if !Match(Lines(strings.Join(out, "\n")), Lines(c.got)) {
			t.Errorf("Update(%q, %q) = %q, which does not match", c.want, c.got, out)
		}
	}
}

func TestRewrite(t *testing.T) {
	got, err := Rewrite("d.md", doc, map[int]Result{
		4:  {Output: Lines("SUMMARY\nnew\nlines\nend"), Exit: 2},
		8:  {Output: Lines("frames\nout"), Exit: 1},
		18: {Output: Lines("header-id-changed\nheader-id-dropped"), Exit: 0},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := strings.NewReplacer(
		"x.pcapng   # exit 1\n", "x.pcapng   # exit 2\n",
		"    x.pcapng\n```", "    x.pcapng   # exit 1\nframes\nout\n```",
		"  header-id-changed\n", "  header-id-changed\n  header-id-dropped\n",
	).Replace(doc)
	if got != want {
		t.Errorf("Rewrite:\n%s\nwant\n%s", got, want)
	}
	// What Rewrite writes, Parse reads back as the results.
	exs, err := Parse("d.md", got)
	if err != nil {
		t.Fatal(err)
	}
	if exs[1].Exit != 1 || !Match(exs[2].Want, Lines("header-id-changed\nheader-id-dropped")) {
		t.Errorf("rewritten examples read back as %+v", exs)
	}
	if _, err := Rewrite("d.md", doc, map[int]Result{4: {Output: Lines("SUMMARY\nend"), Exit: 0}}); err != nil {
		t.Fatal(err)
	}
}

func TestSetExit(t *testing.T) {
	for _, c := range []struct {
		line string
		code int
		want string
	}{
		{"$ kidscope x", 1, "$ kidscope x   # exit 1"},
		{"$ kidscope x   # exit 1", 2, "$ kidscope x   # exit 2"},
		{"$ kidscope x   # exit 1: a finding", 0, "$ kidscope x"},
		{"$ kidscope x", 0, "$ kidscope x"},
	} {
		if got := setExit(c.line, c.code); got != c.want {
			t.Errorf("setExit(%q, %d) = %q, want %q", c.line, c.code, got, c.want)
		}
	}
}

func TestScript(t *testing.T) {
	exs, err := Parse("d.md", doc)
	if err != nil {
		t.Fatal(err)
	}
	got := string(Script("d.md", exs))
	for _, want := range []string{
		"doc d.md 4 1 'kidscope analyze x.pcapng   # exit 1'\n",
		"doc d.md 8 0 'kidscope frames      x.pcapng'\n",
		"-- want/4 --\nSUMMARY\n...\nend\n",
		"-- want/8 --\n",
		"-- want/18 --\nheader-id-changed\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("no %q in the script:\n%s", want, got)
		}
	}
	if got := shellLine("go run ./cmd/kidscope analyze 'it''s'"); got != "kidscope analyze 'it''s'" {
		t.Errorf("shellLine = %q", got)
	}
	if got := quote("a 'b'"); got != "'a ''b'''" {
		t.Errorf("quote = %q", got)
	}
}
