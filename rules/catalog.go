package rules

import (
	"path"
	"sort"
)

// Rule describes one rule of RULES.md.
type Rule struct {
	ID       string
	Severity Severity
	Section  string // RULES.md section
	Profile  string // "seed", "accepted", "both" or "" (profile-independent)
	Summary  string // one line
	Detail   string // the full text: when it fires and what it shows
	// Example names a sample scenario that shows it (samples/README.md).
	Example string
}

// Rule IDs. They are stable: output, tests, docs and --rule use them.
const (
	HeaderIDChanged        = "header-id-changed"
	HeaderIDDropped        = "header-id-dropped"
	HeaderIDLate           = "header-id-late"
	HeaderIDMissingFirst   = "header-id-missing-first"
	HeaderIDReserved       = "header-id-reserved"
	HeaderClientIDRepeated = "header-client-id-repeated"
	HeaderIDRepeated       = "header-id-repeated"

	TelemetryBodyMismatch       = "telemetry-body-mismatch"
	TelemetryIDNotReused        = "telemetry-id-not-reused"
	TelemetryPushReservedID     = "telemetry-push-reserved-id"
	TelemetryPushAfterTerminate = "telemetry-push-after-terminating"
	TelemetryIDMissing          = "telemetry-id-missing"
	TelemetryPushUnknownID      = "telemetry-push-unknown-id"
	BrokerIDNotAssigned         = "broker-id-not-assigned"
	BrokerIDConflict            = "broker-id-conflict"
	BrokerRejectedValid         = "broker-rejected-valid"
	BrokerIDReissued            = "broker-id-reissued"

	JoinMemberIDNotUsed            = "join-member-id-not-used"
	JoinMemberIDRequiredOldVersion = "join-member-id-required-old-version"
	HeartbeatMemberIDEmpty         = "heartbeat-member-id-empty"
	HeartbeatMemberIDChanged       = "heartbeat-member-id-changed"
	InstanceIDShared               = "instance-id-shared"
	InstanceIDSplit                = "instance-id-split"
	StreamMidStart                 = "stream-mid-start"
	StreamGap                      = "stream-gap"
	StreamNotKafka                 = "stream-not-kafka"
	StreamUnanswered               = "stream-unanswered"
)

// precedence is RULES.md §1's order: a request gets at most one finding
// from §3 and §4 together, the first of these that applies.
var precedence = []string{
	HeaderIDReserved, HeaderIDMissingFirst, HeaderIDChanged, HeaderIDDropped, HeaderIDLate,
	TelemetryPushReservedID, TelemetryBodyMismatch, TelemetryIDMissing, TelemetryIDNotReused,
	TelemetryPushAfterTerminate, TelemetryPushUnknownID, HeaderClientIDRepeated, HeaderIDRepeated,
}

var catalog = []Rule{
	{HeaderIDChanged, Error, "3", "both", "a later request carries a non-zero instance ID different from the connection's established one",
		"Every request of a connection that carries a header client instance ID (tag 0) must carry the ID the connection established with its first ID-relevant request (seed: the first flexible-header request; accepted: the first header-v3 request; mid-stream: the first non-zero ID seen). Evidence: the establishing frame, the offending frame, both IDs, the broker's answer.",
		"hdr-seed-changed"},
	{HeaderIDDropped, Error, "3", "seed", "the first flexible-header request carried ID X; a later one carries none (or ZERO)",
		"Under the seed profile a connection whose first flexible-header request carried an ID must carry it on every later flexible-header request; header-v1 requests are exempt. An explicit ZERO counts as absent.",
		"hdr-seed-dropped"},
	{HeaderIDLate, Error, "3", "seed", "the first flexible-header request carried no ID; a later one carries an ID",
		"Under the seed profile a connection whose first flexible-header request carried no ID must never carry one. Never fires on a connection whose start the capture missed.",
		"hdr-seed-late"},
	{HeaderIDMissingFirst, Error, "3", "accepted", "the first header-v3 request of the connection carries no ID",
		"Under the accepted profile the first request that uses request header v3 must carry a non-reserved client instance ID. Never fires on a connection whose start the capture missed.",
		"hdr-acc-missing-first"},
	{HeaderIDReserved, Error, "3", "both", "a header carries ONE, or (accepted) an explicit ZERO tag",
		"ZERO (all zero) and ONE (…01) are reserved UUIDs. A header instance ID of ONE is always wrong; under the accepted profile an explicit ZERO tag is rejected too (under seed it means absent).",
		"hdr-acc-reserved-zero"},
	{HeaderClientIDRepeated, Warning, "3", "accepted", "a later header-v3 request carries a non-null ClientId",
		"Under the accepted profile later header-v3 requests send a null ClientId; the KIP text moved between \"ignored\" and \"rejected\", hence a warning.",
		"hdr-acc-client-id-repeated"},
	{HeaderIDRepeated, Info, "3", "accepted", "a later header-v3 request repeats the same ID",
		"Under the accepted profile later header-v3 requests omit the ID; repeating it is allowed or not depending on an unsettled upstream discussion.",
		"hdr-acc-id-repeated"},
	{TelemetryBodyMismatch, Error, "4", "", "a v0 GetTelemetrySubscriptions or PushTelemetry carries header ID H ≠ ZERO and body ID ≠ H",
		"If a client sends an instance ID in the request header, the body's ClientInstanceId of a v0 telemetry request must equal it (seed table, last two rows); a KIP-1313 broker answers INVALID_REQUEST.",
		"gts-row5-body-differs"},
	{TelemetryIDNotReused, Error, "4", "", "a later telemetry request of the same client instance carries another ID, or ZERO, after it got telemetry ID X",
		"After a client got telemetry ID X (assigned by the broker, or sent and accepted), its later GetTelemetrySubscriptions and PushTelemetry requests (same connection, or a connection linked by the same header ID) must carry X.",
		"tel-assigned-not-reused"},
	{TelemetryPushReservedID, Error, "4", "", "a PushTelemetry identifies itself by ZERO or ONE",
		"The ID a PushTelemetry identifies itself by (v0: its body; v1: its header, or the connection's established ID) must not be reserved; the broker answers INVALID_REQUEST.",
		"tel-push-zero"},
	{TelemetryPushAfterTerminate, Error, "4", "", "a PushTelemetry for an instance ID after a terminating push for that ID, with no exchange re-issuing the ID since",
		"After a PushTelemetry with Terminating = true, no further push may use that instance ID, unless the broker handed the ID out again: a GetTelemetrySubscriptions exchange after the terminating push, on any connection, assigned it (the broker returned it, answering NONE) or accepted it (the client identified itself by it and the broker answered NONE). Pushes for the ID after such an exchange are not reported; if the broker gave the ID to another client that asked for a new one, that answer is reported as broker-id-reissued. Once a broker has handed one ID to several clients, a terminating push ends only the use of the client that sent it: the others' pushes are not reported.",
		"tel-push-after-terminating"},
	{TelemetryIDMissing, Error, "4", "", "a v1 telemetry request with no header ID on a connection that has no ID either",
		"Telemetry v1 bodies carry no ClientInstanceId: the header (or the connection's established ID) is all that identifies the client.",
		"tel-v1-header-id"},
	{TelemetryPushUnknownID, Warning, "4", "", "a PushTelemetry with an ID no GetTelemetrySubscriptions exchange in the capture assigned or accepted",
		"A push should use an ID a GetTelemetrySubscriptions exchange produced. The capture may simply have started after that exchange.",
		"tel-push-unknown-id"},
	{BrokerIDNotAssigned, Error, "4", "", "a GetTelemetrySubscriptions with R = ZERO and no H was answered NONE with B = ZERO",
		"An initial KIP-714 request asks the broker for an ID; answering NONE without one leaves the client with nothing to use.",
		"tel-broker-no-id"},
	{BrokerIDConflict, Warning, "4", "", "a GetTelemetrySubscriptions with R ≠ ZERO was answered with another non-zero ID",
		"Apache brokers echo R (or answer ZERO); any other ID is wrong.",
		"tel-broker-id-conflict"},
	{BrokerRejectedValid, Warning, "4", "", "the broker answered INVALID_REQUEST to a request no rule finds wrong",
		"A broker that rejects a request kidscope finds valid either checks something the rules do not, or is wrong.",
		"tel-broker-rejects-valid"},
	{BrokerIDReissued, Warning, "4", "", "a GetTelemetrySubscriptions asking for a new ID was answered with an ID already seen on another connection",
		"A client that has no telemetry ID asks for one with GetTelemetrySubscriptions v0: body ClientInstanceId ZERO and no instance ID in the header. The broker must answer with a new ID, unique to that client. This answer (NONE) gave an ID the capture had already seen on another connection: assigned there by a broker, or used there as a header or telemetry ID (connections with the same header instance ID are one client and do not count). Two clients now share one telemetry ID; librdkafka's mock cluster, for one, gives every client the same ID. The fault is the broker's, not the clients': their pushes with the ID are not reported as pushes after another client's terminating push. Reported at the response, once per answer; related frames: where the ID was first seen on another connection, and the request.",
		"tel-broker-reissues-id"},
	{JoinMemberIDNotUsed, Error, "6", "", "after MEMBER_ID_REQUIRED with member ID M, the next JoinGroup for the group carries another ID",
		"KIP-394: a JoinGroup v4+ with an empty member ID is answered MEMBER_ID_REQUIRED (79) with the assigned member ID M; the client must rejoin with M (same connection, or the same client instance on another).",
		"grp-join-rejoin-wrong"},
	{JoinMemberIDRequiredOldVersion, Warning, "6", "", "MEMBER_ID_REQUIRED sent in answer to JoinGroup v0–v3",
		"Clients before JoinGroup v4 do not know MEMBER_ID_REQUIRED.",
		"grp-join-old-version"},
	{HeartbeatMemberIDEmpty, Error, "6", "", "ConsumerGroupHeartbeat v1+ with an empty MemberId",
		"KIP-1082: from ConsumerGroupHeartbeat v1 the client generates its member ID and keeps it for its lifetime; an empty one is INVALID_REQUEST.",
		"grp-cgh-empty-member"},
	{HeartbeatMemberIDChanged, Warning, "6", "", "the member ID changes on a connection and group without leaving first",
		"A member keeps its ID until it leaves the group (MemberEpoch -1).",
		"grp-cgh-member-changed"},
	{InstanceIDShared, Warning, "7", "", "one client instance ID is used from two or more client IP addresses",
		"A client instance ID names one client instance; seen from two addresses it is copied or not unique. Reported once per ID, on the first connection from the second address.",
		"inst-shared"},
	{InstanceIDSplit, Info, "7", "", "one client (same IP and ClientId) has overlapping connections with different instance IDs",
		"Overlapping connections of one client normally share its instance ID; different ones suggest several instances in one process.",
		"inst-split"},
	{StreamMidStart, Info, "8", "", "the connection began before the capture; first-request rules were not applied",
		"Without the connection's first request, header-id-late and header-id-missing-first cannot be judged.",
		"stream-mid-start"},
	{StreamGap, Info, "8", "", "bytes are missing; the Kafka framing was resynchronised",
		"Lost packets or the snap length left a hole; what was in it is unknown.",
		"stream-lost-segment"},
	{StreamNotKafka, Info, "8", "", "the bytes on a Kafka port are not Kafka (TLS is named as TLS)",
		"kidscope reads plaintext Kafka only.",
		"tls-on-kafka-port"},
	{StreamUnanswered, Info, "8", "", "requests with no response in the capture (counted)",
		"acks=0 produce requests, or answers the capture did not hold.",
		"hdr-acc-changed"},
}

// Catalog returns every rule, in RULES.md order.
func Catalog() []Rule { return append([]Rule(nil), catalog...) }

// Lookup returns one rule.
func Lookup(id string) (Rule, bool) {
	for _, r := range catalog {
		if r.ID == id {
			return r, true
		}
	}
	return Rule{}, false
}

// Select returns the IDs of the rules matching any of the patterns (IDs or
// path.Match globs such as telemetry-*), sorted; unknown patterns are
// returned as unmatched.
func Select(patterns []string) (ids []string, unmatched []string) {
	seen := map[string]bool{}
	for _, p := range patterns {
		hit := false
		for _, r := range catalog {
			if ok, _ := path.Match(p, r.ID); ok {
				hit = true
				if !seen[r.ID] {
					seen[r.ID] = true
					ids = append(ids, r.ID)
				}
			}
		}
		if !hit {
			unmatched = append(unmatched, p)
		}
	}
	sort.Strings(ids)
	return ids, unmatched
}

func severityOf(id string) Severity {
	r, _ := Lookup(id)
	return r.Severity
}
