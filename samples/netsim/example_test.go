package netsim_test

import (
	"bytes"
	"fmt"
	"net/netip"

	"github.com/kidscope/kidscope/samples/netsim"
)

func Example() {
	c := netsim.New(netsim.Options{Format: netsim.PcapNG, Link: netsim.Ethernet, Seed: 1})
	cn := c.Open(netip.MustParseAddrPort("10.0.0.1:50000"), netip.MustParseAddrPort("10.0.0.2:9092"), netsim.ConnOptions{})
	request := bytes.Repeat([]byte{'q'}, 3000)
	// Cut the 4-byte length prefix off the rest, and capture the last two
	// segments out of order.
	done := cn.Send(true, request, netsim.SplitAt(4), netsim.Reorder(2, 3))
	cn.Send(false, []byte("response"))
	cn.Close(true)
	fmt.Println("request complete in frame", done, "of", c.Frames())
	var file bytes.Buffer
	if _, err := c.WriteTo(&file); err != nil {
		fmt.Println(err)
	}
	// Output: request complete in frame 9 of 14
}
