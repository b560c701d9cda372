package report

import (
	"fmt"

	"github.com/kidscope/kidscope/rules"
)

// The names of the rules' enumerated evidence: value kinds, related
// frames' roles, answer states and stream kinds, and of the connections'
// profiles. The JSON report writes
// them, and the records kidscope agents publish (package fleet) carry
// them, from these tables: a name means one thing in both, and the
// numbers the rules give those values inside the process never reach a
// reader, which a value inserted among them would silently change.

// Names is the two-way table of one enumerated type's names.
type Names[T comparable] struct {
	name  map[T]string
	value map[string]T
}

func newNames[T comparable](names map[T]string) Names[T] {
	n := Names[T]{name: names, value: map[string]T{}}
	for v, s := range names {
		if _, twice := n.value[s]; twice || s == "" {
			panic(fmt.Sprintf("report: name %q of %v is empty or given twice", s, v))
		}
		n.value[s] = v
	}
	return n
}

// Name is v's name; ok is false for a value without one.
func (n Names[T]) Name(v T) (name string, ok bool) {
	name, ok = n.name[v]
	return name, ok
}

// Value is the value named name; ok is false for a name this kidscope does
// not know.
func (n Names[T]) Value(name string) (v T, ok bool) {
	v, ok = n.value[name]
	return v, ok
}

// Len is how many values have names.
func (n Names[T]) Len() int { return len(n.name) }

// ValueKindNames name the value kinds (valueForms): the JSON kind, and its
// context after a slash when it has one ("no-id/already-established"),
// unless the form has a name of its own.
var ValueKindNames = func() Names[rules.ValueKind] {
	names := map[rules.ValueKind]string{}
	for k, f := range valueForms {
		kind := f.kind
		if kind == "" {
			kind = "id"
		}
		switch {
		case f.name != "":
			names[k] = f.name
		case f.ctx != "":
			names[k] = kind + "/" + f.ctx
		default:
			names[k] = kind
		}
	}
	return newNames(names)
}()

// RoleNames name the roles of related frames (JSON "role").
var RoleNames = newNames(map[rules.Role]string{
	rules.RoleEstablished:     "established",
	rules.RoleAnswer:          "answer",
	rules.RoleRequest:         "request",
	rules.RoleAssigned:        "assigned",
	rules.RoleTerminated:      "terminated",
	rules.RoleFirstSeen:       "first-seen",
	rules.RoleOtherConnection: "other-connection",
	rules.RolePrevious:        "previous",
})

// AnswerStateNames name what became of the request a finding concerns
// (JSON answer "state"); a finding about no request (NotAnswerable) has
// none.
var AnswerStateNames = newNames(map[rules.AnswerState]string{
	rules.Answered:           "answered",
	rules.NoResponse:         "no-response",
	rules.NoResponseByDesign: "none-expected", // acks = 0
	rules.ClosedByBroker:     "closed-by-broker",
})

// StreamKindNames name what a finding about a connection's bytes shows; a
// finding about a request or answer (AboutRequest) has none.
var StreamKindNames = newNames(map[rules.StreamKind]string{
	rules.LostBytes:          "lost-bytes",
	rules.NotKafkaBytes:      "not-kafka",
	rules.MissedStart:        "missed-start",
	rules.UnansweredRequests: "unanswered-requests",
})

// ProfileNames name the KIP-1313 revision a connection was judged by (JSON
// connection "profile"); ProfileNone has none.
var ProfileNames = newNames(map[rules.Profile]string{
	rules.ProfileSeed:     rules.ProfileSeed.String(),
	rules.ProfileAccepted: rules.ProfileAccepted.String(),
})
