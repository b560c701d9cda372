// Package size reads and writes byte counts the way kidscope's size flags
// and the bench tools take them on the command line: "1GB", "100MB",
// "64KiB", "1M", "1500". KB, MB, GB and TB, and K, M, G and T alone, are
// powers of 1000 (the MB/s of the tables is 10^6 bytes a second, and
// tcpdump -C counts millions of bytes); KiB, MiB, GiB and TiB powers of
// 1024. Case does not matter; a space may stand before the unit.
package size

import (
	"fmt"
	"strconv"
	"strings"
)

var units = []struct {
	suffix string
	mult   float64
}{
	// Longest first, so that "MiB" is not read as "B" after "Mi".
	{"KIB", 1 << 10}, {"MIB", 1 << 20}, {"GIB", 1 << 30}, {"TIB", 1 << 40},
	{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12},
	{"K", 1e3}, {"M", 1e6}, {"G", 1e9}, {"T", 1e12}, {"B", 1},
}

// Parse reads a byte count such as "1GB", "2.5 MiB" or "4096".
func Parse(s string) (int64, error) {
	t := strings.ToUpper(strings.TrimSpace(s))
	mult := 1.0
	for _, u := range units {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.mult
			break
		}
	}
	// Plain decimals only: ParseFloat would also take "NaN", "Inf", "1e3"
	// and hexadecimal.
	if t == "" || strings.Trim(t, "0123456789.") != "" {
		return 0, syntaxError(s)
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || f*mult > 1<<62 {
		return 0, syntaxError(s)
	}
	return int64(f * mult), nil
}

// syntaxError is the one error of Parse, whichever flag it reads: the
// text, and what a size looks like.
func syntaxError(s string) error {
	return fmt.Errorf("%q: want a size such as 1MB, 1MiB, 1M or 1048576", s)
}

// Human is n bytes for people, in binary units as the sizes flags accept
// them (2,069 bytes: 2.0 KiB): the one byte formatter of every output, so
// that a run never shows one size two ways.
func Human(n int64) string {
	const unit = 1024
	if n < unit {
		return strconv.FormatInt(n, 10) + " B"
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 4; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTP"[exp])
}
