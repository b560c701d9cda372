//go:build !libpcap

package capture

import (
	"errors"

	"golang.org/x/net/bpf"
)

var errLibpcapTimeout = errors.New("libpcap timeout")

// openLibpcap is only in binaries built with -tags libpcap.
func openLibpcap(LiveOptions, []bpf.RawInstruction) (frameSource, error) {
	return nil, errors.New("this kidscope was built without libpcap (go build -tags libpcap, with cgo and libpcap-dev)")
}
