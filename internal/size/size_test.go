package size

import "testing"

func TestParse(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"1GB", 1e9, true},
		{"100MB", 100e6, true},
		{"64KiB", 64 << 10, true},
		{"2.5 MiB", 5 << 19, true},
		{"4096", 4096, true},
		{"0", 0, true},
		{"1tb", 1e12, true},
		{"1MB", 1e6, true},
		{"1MiB", 1 << 20, true},
		{"1M", 1e6, true},
		{"1m", 1e6, true},
		{"1048576", 1 << 20, true},
		{"1 GiB", 1 << 30, true},
		{"", 0, false},
		{"MB", 0, false},
		{"-1MB", 0, false},
		{"lots", 0, false},
		{"nan", 0, false},
		{"NaNKB", 0, false},
		{"inf", 0, false},
		{"1e3", 0, false},
		{"0x1p4", 0, false},
		{"1.2.3", 0, false},
		{"99999999TB", 0, false},
	} {
		got, err := Parse(c.in)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("Parse(%q) = %d, %v; want %d, ok %v", c.in, got, err, c.want, c.ok)
		}
	}
}

func TestParseError(t *testing.T) {
	_, err := Parse("1XB")
	if err == nil || err.Error() != `"1XB": want a size such as 1MB, 1MiB, 1M or 1048576` {
		t.Errorf("Parse(1XB) error = %v", err)
	}
}
