package rules

import "testing"

func TestBrokerChecker(t *testing.T) {
	rejected := func(at int64, related []Related) typed {
		return typed{rule: BrokerRejectedValid, at: at, expected: Value{Kind: ValueAccepted},
			seen: Value{Kind: ValueErrorCode, Code: 42}, related: related, answer: answered(42)}
	}
	testChecker(t, newBrokerChecker(1000, 1000), []checkerCase{
		{"rejects a request no rule looks at", Options{}, func(s *script) {
			c := s.open(1, "10.0.0.1:5000", "10.0.0.9:9092", false)
			corr := c.req(apiVersions, 3, none(), nil) // 2
			c.resp(corr, 42, nil)                      // 3
		}, []typed{rejected(3, []Related{rel(2, RoleRequest)})}},
		{"rejects a request whose possible findings do not apply", Options{}, func(s *script) {
			c := s.open(1, "10.0.0.1:5000", "10.0.0.9:9092", false)
			c.ok(apiVersions, 3, none(), nil)           // 2,3
			corr := c.req(metadata, 12, with(idA), nil) // 4: late under seed, but no N: undetermined
			c.resp(corr, 42, nil)                       // 5
		}, []typed{rejected(5, []Related{rel(4, RoleRequest)})}},
		{"twin: a rejection a rule explains", Options{}, func(s *script) {
			c := s.open(1, "10.0.0.1:5000", "10.0.0.9:9092", false)
			c.ok(apiVersions, 3, with(idA), nil)
			c.ok(metadata, 12, with(idA), nil)
			corr := c.req(metadata, 12, with(idB), nil) // header-id-changed
			c.resp(corr, 42, nil)
		}, nil},
		{"twin: accepted", Options{}, func(s *script) {
			c := s.open(1, "10.0.0.1:5000", "10.0.0.9:9092", false)
			c.ok(apiVersions, 3, none(), nil)
		}, nil},
	})
}
