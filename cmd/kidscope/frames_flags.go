package main

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/kidscope/kidscope/decode"
	"github.com/kidscope/kidscope/report"
)

// framesFlags are the flags only `kidscope frames` has: the fields and
// their shape, as tshark -T fields takes them, and the filters.
type framesFlags struct {
	fields      []string // -e, repeatable, comma lists
	fieldOpts   []string // -E, repeatable, comma lists
	apis        []string // --api
	connections []string // --connection
}

// parseFields splits the -e values: repeated, or comma lists.
func parseFields(vals []string) ([]string, error) {
	var out []string
	for _, v := range vals {
		for _, f := range strings.Split(v, ",") {
			f = strings.TrimSpace(f)
			if f == "" {
				return nil, fmt.Errorf("-e %q: an empty field name", v)
			}
			out = append(out, f)
		}
	}
	return out, nil
}

// parseFieldOptions reads -E, tshark's syntax: header=y|n,
// separator=/t|/s|CHAR, quote=d|s|n, aggregator=/s|CHARS; several in one
// value parted by commas. A separator or aggregator may be a comma itself
// ("separator=,"): its value is one character (or /t, /s), read before
// the next comma is looked for.
func parseFieldOptions(vals []string, opt *report.FramesOptions) error {
	for _, v := range vals {
		rest := v
		for rest != "" {
			key, after, ok := strings.Cut(rest, "=")
			if !ok {
				return fmt.Errorf("-E %q: want KEY=VALUE (header, separator, quote, aggregator)", v)
			}
			var val string
			switch key {
			case "separator", "aggregator":
				val, rest = cutChar(after)
				if r, ok := strings.CutPrefix(rest, ","); ok {
					rest = r
				} else if rest != "" {
					return fmt.Errorf("-E %q: %s takes one character (or /t, /s)", v, key)
				}
			default:
				val, rest, _ = strings.Cut(after, ",")
			}
			if err := setFieldOption(key, val, opt); err != nil {
				return fmt.Errorf("-E %q: %w", v, err)
			}
		}
	}
	return nil
}

// cutChar takes a separator's value off s: /t, /s or one character.
func cutChar(s string) (val, rest string) {
	if strings.HasPrefix(s, "/t") || strings.HasPrefix(s, "/s") {
		return s[:2], s[2:]
	}
	_, n := utf8.DecodeRuneInString(s)
	return s[:n], s[n:]
}

func setFieldOption(key, val string, opt *report.FramesOptions) error {
	switch key {
	case "header":
		switch val {
		case "y", "n":
			h := val == "y"
			opt.Header = &h
			return nil
		}
		return fmt.Errorf("header=%s: want y or n", val)
	case "separator":
		r, err := optChar(val)
		if err != nil {
			return fmt.Errorf("separator: %w", err)
		}
		opt.Separator = r
		return nil
	case "aggregator":
		r, err := optChar(val)
		if err != nil {
			return fmt.Errorf("aggregator: %w", err)
		}
		opt.Aggregator = string(r)
		return nil
	case "quote":
		switch val {
		case "d":
			opt.Quote = '"'
		case "s":
			opt.Quote = '\''
		case "n":
			opt.Quote = 0
		default:
			return fmt.Errorf("quote=%s: want d, s or n", val)
		}
		return nil
	}
	return fmt.Errorf("unknown option %q: frames takes header, separator, quote and aggregator", key)
}

// optChar reads /t (a tab), /s (a space) or one printable character.
func optChar(val string) (rune, error) {
	switch val {
	case "/t":
		return '\t', nil
	case "/s":
		return ' ', nil
	}
	r, n := utf8.DecodeRuneInString(val)
	if val == "" || n != len(val) || r == utf8.RuneError || r < 0x20 || r == 0x7f || r == '\\' {
		return 0, fmt.Errorf("%q: want /t, /s or one printable character other than \\", val)
	}
	return r, nil
}

// parseAPIs reads --api: key numbers, or names as frames prints them,
// case-insensitive (Produce, offsetfetch).
func parseAPIs(vals []string) ([]int16, error) {
	var keys []int16
	for _, v := range vals {
		for _, s := range strings.Split(v, ",") {
			s = strings.TrimSpace(s)
			key, err := parseAPI(s)
			if err != nil {
				return nil, err
			}
			if !slices.Contains(keys, key) {
				keys = append(keys, key)
			}
		}
	}
	return keys, nil
}

func parseAPI(s string) (int16, error) {
	if n, err := strconv.ParseInt(s, 10, 16); err == nil {
		if n < 0 {
			return 0, fmt.Errorf("--api %s: an API key is from 0 to %d", s, math.MaxInt16)
		}
		// A key the table does not know may still be in a capture (a
		// newer client's): it is taken as it is.
		return int16(n), nil
	}
	if s == "" {
		return 0, errors.New("--api: an empty API")
	}
	for k := range int16(math.MaxInt16) {
		if a, ok := decode.LookupAPI(k); ok && strings.EqualFold(a.Name, s) {
			return k, nil
		}
	}
	return 0, fmt.Errorf("--api %q: no Kafka API has that name (give its name as frames prints it, such as Produce, or its key number)", s)
}

// parseConnections reads --connection: connection numbers, as analyze's
// connections table and frames' CONN column number them.
func parseConnections(vals []string) ([]int, error) {
	var ids []int
	for _, v := range vals {
		for _, s := range strings.Split(v, ",") {
			s = strings.TrimSpace(s)
			n, err := strconv.Atoi(s)
			if err != nil || n < 1 {
				return nil, fmt.Errorf("--connection %q: want a connection number (1, 2, … as analyze and frames number them)", s)
			}
			if !slices.Contains(ids, n) {
				ids = append(ids, n)
			}
		}
	}
	return ids, nil
}
