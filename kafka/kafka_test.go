package kafka

import (
	"slices"
	"testing"
	"time"
)

func TestUUIDForms(t *testing.T) {
	cases := []struct {
		u         UUID
		kafka     string
		rfc       string
		zero, one bool
	}{
		{UUID{}, "AAAAAAAAAAAAAAAAAAAAAA", "00000000-0000-0000-0000-000000000000", true, false},
		{UUID{15: 1}, "AAAAAAAAAAAAAAAAAAAAAQ", "00000000-0000-0000-0000-000000000001", false, true},
		{UUID{0xfb, 0xff, 0x3e, 0x12, 0x9a, 0x01, 0x4c, 0x7d, 0x80, 0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0xff},
			"-_8-EpoBTH2AABEiM0RV_w", "fbff3e12-9a01-4c7d-8000-1122334455ff", false, false},
	}
	for _, c := range cases {
		if got := c.u.String(); got != c.kafka {
			t.Errorf("String() = %q, want %q", got, c.kafka)
		}
		if got := c.u.RFC4122(); got != c.rfc {
			t.Errorf("RFC4122() = %q, want %q", got, c.rfc)
		}
		if c.u.IsZero() != c.zero || c.u.IsOne() != c.one || c.u.IsReserved() != (c.zero || c.one) {
			t.Errorf("%s: IsZero %v IsOne %v", c.kafka, c.u.IsZero(), c.u.IsOne())
		}
		for _, s := range []string{c.kafka, c.rfc, "urn:uuid:" + c.rfc} {
			got, err := ParseUUID(s)
			if err != nil || got != c.u {
				t.Errorf("ParseUUID(%q) = %v, %v; want %v", s, got, err, c.u)
			}
		}
	}
	for _, bad := range []string{"", "AAAA", "not-a-uuid-at-all-really", "AAAAAAAAAAAAAAAAAAAA*A", "AAAAAAAAAAAAAAAAAAAAAR"} {
		if _, err := ParseUUID(bad); err == nil {
			t.Errorf("ParseUUID(%q) took it", bad)
		}
	}
}

func TestFrameOrder(t *testing.T) {
	t0 := time.Unix(100, 0)
	fs := []FrameRef{{File: 1, Frame: 2}, {File: 0, Frame: 9, Time: t0}, {File: 1, Frame: 1}, {File: 0, Frame: 3}}
	slices.SortFunc(fs, FrameRef.Compare)
	want := []FrameRef{{File: 0, Frame: 3}, {File: 0, Frame: 9, Time: t0}, {File: 1, Frame: 1}, {File: 1, Frame: 2}}
	if !slices.Equal(fs, want) {
		t.Errorf("sorted %v, want %v", fs, want)
	}
	if !(FrameRef{File: 0, Frame: 9}).Same(fs[1]) || fs[0].Same(fs[1]) {
		t.Error("Same compares file and frame only")
	}
}
