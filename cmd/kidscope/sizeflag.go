package main

import (
	"strings"

	"github.com/kidscope/kidscope/internal/size"
)

// sizeValue is a flag that takes a byte count, read by internal/size for
// every such flag: 1MB (10^6 bytes), 1MiB (2^20), 1M (= 1MB), 1048576. A
// wrong one is refused while the flags are parsed, with size's one error
// ("--write-max-size "1XB": want a size such as …", flagError).
type sizeValue struct {
	text string
	n    int64
	// unit is what a plain number counts: 1 (bytes), or 1 MiB for
	// --ring-size, whose plain numbers have always been MiB.
	unit int64
}

func newSize(text string, unit int64) *sizeValue {
	v := &sizeValue{unit: unit}
	if text != "" {
		if err := v.Set(text); err != nil {
			panic(err) // a default written here
		}
	}
	return v
}

func (v *sizeValue) String() string { return v.text }
func (v *sizeValue) Type() string   { return "size" }

func (v *sizeValue) Set(s string) error {
	n, err := size.Parse(s)
	if err != nil {
		return err
	}
	if v.unit > 1 && strings.Trim(strings.TrimSpace(s), "0123456789") == "" {
		n *= v.unit
	}
	v.text, v.n = s, n
	return nil
}

// given reports whether the flag holds a value (its default, or one given).
func (v *sizeValue) given() bool { return v.text != "" }
