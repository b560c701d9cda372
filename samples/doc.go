// Package samples is kidscope's scenario generator: small, realistic packet
// captures, each with the findings docs/design/rules.md says it must produce, so that
// the rules engine has evidence no public capture holds yet (no Kafka
// client sends KIP-1313 header IDs).
//
// A Scenario is data: connections, each a script of Steps (requests and
// responses with their header IDs and kmsg bodies, raw bytes, TCP
// behaviour such as segment cuts, reordering, loss, a broker that closes),
// the profile each connection must be judged by, each broker's KIP-1313
// verdict, and the expected findings attached to the message they concern.
// Build turns a scenario into capture bytes (netsim: TCP/IP, pcap or
// pcapng) and an Expectation (NAME.expect.json) whose frame numbers come
// from netsim, never from the scenario text. The same scenario gives the
// same bytes on every run.
//
// All lists every scenario; Small the ones committed under
// samples/captures (all but the large clean capture); WriteAll writes them
// into a directory (what `kidscope samples DIR` does). README.md beside
// this file lists the scenarios, what each must produce, the seed's
// GetTelemetrySubscriptions table with the scenarios that cover each row,
// and how the expectations read the places where docs/design/rules.md is ambiguous.
//
// The tests check the captures against the script three ways: the
// decoder's listing (what `kidscope frames` prints), Wireshark's (tshark),
// and kmsg reading every body back to the same bytes; and they check that
// the committed files are what the generator writes
// (go test ./samples -update rewrites them).
package samples
