// Package wireshark holds what the tests know of Wireshark 4.0's Kafka
// dissector (the tshark that Debian 12 ships and CI installs): which API
// versions it decodes, so a comparison with it looks only where it can
// see.
package wireshark

// max is the highest version of each API key that Wireshark 4.0's Kafka
// dissector decodes (from its "Unsupported … version. Supports v0-N"
// notes). Keys 48 and up it does not know at all. A body of a newer
// version, or of an unknown key, is "malformed" to it; nothing else may be.
var max = map[int16]int16{
	0: 8, 1: 11, 2: 5, 3: 9, 8: 8, 9: 7, 10: 3, 11: 7, 13: 4, 15: 5, 16: 3, 18: 3, 19: 5, 20: 4, 21: 1,
	22: 3, 23: 3, 24: 1, 25: 1, 26: 1, 27: 0, 28: 3, 29: 2, 30: 2, 31: 2, 32: 2, 33: 1, 34: 1, 35: 1,
	37: 2, 38: 2, 41: 2, 42: 2, 45: 0, 47: 0,
}

// Reads reports whether Wireshark 4.0 can dissect this API version.
func Reads(key, version int16) bool {
	if key >= 48 {
		return false
	}
	// Wireshark 4.0.17 misreads the group protocols of every non-flexible
	// JoinGroup (v0-v5), whatever the metadata holds: "Protocol Metadata:
	// <MISSING>", then "Dissected message does not end at the pdu length
	// offset". The bytes follow the schema and kmsg reads them back.
	if key == 11 && version <= 5 {
		return false
	}
	if m, ok := max[key]; ok {
		return version <= m
	}
	return true
}
