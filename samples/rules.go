package samples

// Rule is one rule of RULES.md, as the expectations name it.
type Rule struct {
	ID       string
	Severity string // error, warning, info
	Section  int    // the section of RULES.md that defines it
}

// Rules is the catalogue of RULES.md, in its order. The severities are
// copied from its tables (§8 findings are all info).
var Rules = []Rule{
	{"header-id-changed", "error", 3},
	{"header-id-dropped", "error", 3},
	{"header-id-late", "error", 3},
	{"header-id-missing-first", "error", 3},
	{"header-id-reserved", "error", 3},
	{"header-client-id-repeated", "warning", 3},
	{"header-id-repeated", "info", 3},

	{"telemetry-body-mismatch", "error", 4},
	{"telemetry-id-not-reused", "error", 4},
	{"telemetry-push-reserved-id", "error", 4},
	{"telemetry-push-after-terminating", "error", 4},
	{"telemetry-id-missing", "error", 4},
	{"telemetry-push-unknown-id", "warning", 4},
	{"broker-id-not-assigned", "error", 4},
	{"broker-id-conflict", "warning", 4},
	{"broker-rejected-valid", "warning", 4},
	{"broker-id-reissued", "warning", 4},

	{"join-member-id-not-used", "error", 6},
	{"join-member-id-required-old-version", "warning", 6},
	{"heartbeat-member-id-empty", "error", 6},
	{"heartbeat-member-id-changed", "warning", 6},

	{"instance-id-shared", "warning", 7},
	{"instance-id-split", "info", 7},

	{"stream-mid-start", "info", 8},
	{"stream-gap", "info", 8},
	{"stream-not-kafka", "info", 8},
	{"stream-unanswered", "info", 8},
}

// LookupRule returns the rule with this ID.
func LookupRule(id string) (Rule, bool) {
	for _, r := range Rules {
		if r.ID == id {
			return r, true
		}
	}
	return Rule{}, false
}

// Precedence is RULES.md §1's order for the at most one §3/§4 finding a
// request gets: the first that applies wins.
var Precedence = []string{
	"header-id-reserved",
	"header-id-missing-first",
	"header-id-changed",
	"header-id-dropped",
	"header-id-late",
	"telemetry-push-reserved-id",
	"telemetry-body-mismatch",
	"telemetry-id-missing",
	"telemetry-id-not-reused",
	"telemetry-push-after-terminating",
	"telemetry-push-unknown-id",
	"header-client-id-repeated",
	"header-id-repeated",
}
