package report

import (
	"slices"
	"unicode/utf8"

	"github.com/kidscope/kidscope/kafka"
	"github.com/kidscope/kidscope/rules"
)

// minAbbrev is the fewest characters of an ID a table shows: 8 of
// Kafka's 22 (48 bits), as git shows at least 7 of a hash's 40.
const minAbbrev = 8

// abbreviations gives each ID text of one report the shortest prefix, of
// at least minAbbrev characters, that no other ID of the same report
// shares, so that two different IDs never print alike (git abbreviates
// hashes the same way). It is computed once over every ID the report can
// show in a shortened form.
type abbreviations map[string]int

func newAbbreviations(a *Analysis, form UUIDForm) abbreviations {
	seen := map[kafka.UUID]bool{}
	add := func(u kafka.UUID) {
		if !u.IsReserved() {
			seen[u] = true
		}
	}
	addValue := func(v rules.Value) {
		if v.ID != (kafka.UUID{}) {
			add(v.ID)
		}
	}
	res := &a.Result
	for i := range res.Connections {
		if res.Connections[i].HasInstanceID {
			add(res.Connections[i].InstanceID)
		}
	}
	for i := range res.Instances {
		add(res.Instances[i].ID)
		for _, t := range res.Instances[i].TelemetryIDs {
			add(t)
		}
	}
	for i := range res.Findings {
		addValue(res.Findings[i].Expected)
		addValue(res.Findings[i].Seen)
	}
	for _, l := range a.Ladders {
		for i := range l.Messages {
			if l.Messages[i].HasInstanceID {
				add(l.Messages[i].InstanceID)
			}
		}
	}
	texts := make([]string, 0, len(seen))
	for u := range seen {
		texts = append(texts, form.format(u))
	}
	slices.Sort(texts)
	ab := make(abbreviations, len(texts))
	for i, s := range texts {
		n := minAbbrev
		if i > 0 {
			n = max(n, commonPrefix(s, texts[i-1])+1)
		}
		if i+1 < len(texts) {
			n = max(n, commonPrefix(s, texts[i+1])+1)
		}
		ab[s] = n
	}
	return ab
}

// commonPrefix is the number of leading bytes a and b share.
func commonPrefix(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// short is s cut to its unique prefix with "…", or whole when the prefix
// would leave at most one character out.
func (ab abbreviations) short(s string) string {
	n, ok := ab[s]
	if !ok {
		n = minAbbrev
	}
	if utf8.RuneCountInString(s) <= n+1 {
		return s
	}
	return s[:n] + "…"
}
