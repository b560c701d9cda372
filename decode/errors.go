package decode

import (
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
)

// ErrorName returns Kafka's name for an error code, as Kafka's Errors enum
// spells it (0 "NONE", 35 "UNSUPPORTED_VERSION", -1 "UNKNOWN_SERVER_ERROR"),
// or "ERROR_N" for a code it does not know.
//
// The names come from franz-go's kerr, which follows Kafka's enum except for
// code 6: kerr keeps the pre-2.7 NOT_LEADER_FOR_PARTITION, Kafka now says
// NOT_LEADER_OR_FOLLOWER (KIP-392).
func ErrorName(code int16) string {
	switch code {
	case 0:
		return "NONE"
	case 6:
		return "NOT_LEADER_OR_FOLLOWER"
	}
	// kerr answers UnknownServerError (-1) for codes it does not know.
	if e := kerr.TypedErrorForCode(code); e != nil && e.Code == code {
		return e.Message
	}
	return "ERROR_" + strconv.Itoa(int(code))
}
