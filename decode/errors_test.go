package decode

import (
	"strings"
	"testing"
)

func TestErrorName(t *testing.T) {
	for code, want := range map[int16]string{
		-1:    "UNKNOWN_SERVER_ERROR",
		0:     "NONE",
		3:     "UNKNOWN_TOPIC_OR_PARTITION",
		6:     "NOT_LEADER_OR_FOLLOWER",
		25:    "UNKNOWN_MEMBER_ID",
		35:    "UNSUPPORTED_VERSION",
		42:    "INVALID_REQUEST",
		58:    "SASL_AUTHENTICATION_FAILED",
		76:    "UNSUPPORTED_COMPRESSION_TYPE",
		79:    "MEMBER_ID_REQUIRED",
		87:    "INVALID_RECORD",
		89:    "THROTTLING_QUOTA_EXCEEDED",
		110:   "FENCED_MEMBER_EPOCH",
		117:   "UNKNOWN_SUBSCRIPTION_ID",
		118:   "TELEMETRY_TOO_LARGE",
		133:   "SHARE_SESSION_LIMIT_REACHED",
		-2:    "ERROR_-2",
		999:   "ERROR_999",
		32767: "ERROR_32767",
	} {
		if got := ErrorName(code); got != want {
			t.Errorf("ErrorName(%d) = %q, want %q", code, got, want)
		}
	}
}

// Every code from -1 up to the last one Kafka defines has a name.
func TestErrorNameContiguous(t *testing.T) {
	for code := int16(-1); code <= 133; code++ {
		if got := ErrorName(code); got == "" || strings.HasPrefix(got, "ERROR_") {
			t.Errorf("ErrorName(%d) = %q", code, got)
		}
	}
}
