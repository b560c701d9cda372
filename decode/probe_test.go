package decode

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestLooksLikeRequest(t *testing.T) {
	table := DefaultAPITable()
	req := func(key, ver int16, corr int32, client string) []byte {
		api, _ := LookupAPI(key)
		body := kmsg.RequestForKey(key)
		body.SetVersion(ver)
		return AppendRequest(nil, RequestHeader{APIKey: key, APIVersion: ver, CorrelationID: corr,
			HeaderVersion: api.RequestHeaderVersion(ver), ClientID: client}, body.AppendTo(nil))
	}
	metadata := req(3, 12, 7, "orders-app")
	long := append(req(3, 12, 7, "orders-app"), make([]byte, 40)...)
	for _, c := range []struct {
		name string
		b    []byte
		want bool
	}{
		{"Metadata v12", metadata, true},
		{"ApiVersions v3", req(18, 3, 0, "kgo"), true},
		{"two requests in one segment", append(req(18, 3, 0, "kgo"), metadata...), true},
		{"the first bytes of a long request", metadata[:14], true},
		{"short", metadata[:11], false},
		{"unknown key", append([]byte{0, 0, 0, 16, 0x03, 0xe7}, metadata[6:]...), false},
		{"unknown version", append([]byte{0, 0, 0, 16, 0, 3, 0x7f, 0}, metadata[8:]...), false},
		{"negative correlation ID", req(3, 12, -1, "orders-app"), false},
		{"client ID with control bytes", req(3, 12, 7, "a\x01b"), false},
		{"a frame shorter than its header", append([]byte{0, 0, 0, 9}, metadata[4:]...), false},
		{"TLS client hello", []byte{0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03, 0x00, 0x00}, false},
		{"HTTP", []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"), false},
		{"trailing bytes past the frame are the next frame's", long, true},
	} {
		if got := LooksLikeRequest(c.b, table, 0); got != c.want {
			t.Errorf("%s: LooksLikeRequest = %v, want %v", c.name, got, c.want)
		}
	}
	big := req(3, 12, 7, "orders-app")
	if LooksLikeRequest(big, table, 8) {
		t.Error("a frame over maxFrame looks like a request")
	}
}
