//go:build !linux || !(amd64 || arm64)

package confine

import "errors"

// The filter's call numbers are written for amd64 and arm64.
func applySeccomp() error { return errors.New("no filter for this architecture") }

const seccompSupported = false
