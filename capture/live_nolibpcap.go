//go:build !libpcap

package capture

import (
	"errors"

	"github.com/gopacket/gopacket/layers"
)

var errLibpcapTimeout = errors.New("libpcap timeout")

// openLibpcap is only in binaries built with -tags libpcap.
func openLibpcap(LiveOptions) (frameSource, layers.LinkType, error) {
	return nil, 0, errors.New("this kidscope was built without libpcap (go build -tags libpcap, with cgo and libpcap-dev)")
}
