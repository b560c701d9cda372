package decode

import (
	"fmt"
	"strconv"
	"strings"
)

//go:generate bash ../scripts/gen-apis.sh

// API describes one Kafka API key.
type API struct {
	Key                    int16
	Name                   string // without the "Request" suffix, e.g. "Produce"
	MinVersion, MaxVersion int16
	FlexibleFrom           int16 // first flexible version; -1 when never flexible
	HeaderV3From           int16 // first version using request header v3; -1 when none
}

// Key numbers the header rules single out.
const (
	keyControlledShutdown int16 = 7
)

// Valid reports whether version is in the key's known range.
func (a API) Valid(version int16) bool {
	return version >= a.MinVersion && version <= a.MaxVersion
}

// UsesHeaderV3 reports whether requests of this version use request header v3.
func (a API) UsesHeaderV3(version int16) bool {
	return a.HeaderV3From >= 0 && version >= a.HeaderV3From
}

// Flexible reports whether this version is flexible: compact strings, arrays
// and bytes, and tagged-field sections in the body and both headers. A
// version that uses request header v3 counts as flexible.
func (a API) Flexible(version int16) bool {
	return (a.FlexibleFrom >= 0 && version >= a.FlexibleFrom) || a.UsesHeaderV3(version)
}

// RequestHeaderVersion returns the request header version (0–3) that
// requests of this version use: 0 for ControlledShutdown v0, 3 for versions
// mapped to header v3, 2 for other flexible versions, else 1.
func (a API) RequestHeaderVersion(version int16) int {
	switch {
	case a.Key == keyControlledShutdown && version == 0:
		return 0
	case a.UsesHeaderV3(version):
		return 3
	case a.Flexible(version):
		return 2
	default:
		return 1
	}
}

// ResponseHeaderVersion returns the response header version (0 or 1) of the
// response to a request of this version: 1 (tagged fields) when the version
// is flexible, except ApiVersions, whose responses always use header v0.
func (a API) ResponseHeaderVersion(version int16) int {
	if a.Key != KeyApiVersions && a.Flexible(version) {
		return 1
	}
	return 0
}

// APITable is a view of the API table with run-time additions, such as the
// CLI's --header-v3 KEY:MINVERSION. It is immutable: WithHeaderV3 returns a
// new table. A nil *APITable is the default table.
type APITable struct {
	headerV3 map[int16]int16 // key → first version using header v3
}

// DefaultAPITable returns the built-in table.
func DefaultAPITable() *APITable {
	return &APITable{}
}

// WithHeaderV3 returns a copy of t in which versions of key from minVersion
// on use request header v3, in addition to the versions already mapped. If
// minVersion is above the key's known max version, the max is raised to it
// (the user names a version that exists), and the added versions are
// flexible. A key the table does not know stays unknown; a negative
// minVersion leaves the table unchanged.
func (t *APITable) WithHeaderV3(key, minVersion int16) *APITable {
	n := &APITable{headerV3: make(map[int16]int16)}
	if t != nil {
		for k, v := range t.headerV3 {
			n.headerV3[k] = v
		}
	}
	if minVersion < 0 {
		return n
	}
	if old, ok := n.headerV3[key]; !ok || minVersion < old {
		n.headerV3[key] = minVersion
	}
	return n
}

// Lookup returns the API of key with the table's additions applied.
func (t *APITable) Lookup(key int16) (API, bool) {
	if key < 0 || int(key) >= len(apiTable) || apiTable[key].Name == "" {
		return API{}, false
	}
	a := apiTable[key]
	if t == nil {
		return a, true
	}
	v3, ok := t.headerV3[key]
	if !ok {
		return a, true
	}
	if v3 > a.MaxVersion {
		if a.FlexibleFrom < 0 {
			a.FlexibleFrom = a.MaxVersion + 1
		}
		a.MaxVersion = v3
	}
	if a.HeaderV3From < 0 || v3 < a.HeaderV3From {
		a.HeaderV3From = v3
	}
	return a, true
}

// LookupAPI returns the built-in description of key.
func LookupAPI(key int16) (API, bool) {
	return (*APITable)(nil).Lookup(key)
}

// APIName returns the name of key, or "Unknown(N)" for a key the table does
// not know.
func APIName(key int16) string {
	if a, ok := LookupAPI(key); ok {
		return a.Name
	}
	return "Unknown(" + strconv.Itoa(int(key)) + ")"
}

// ParseHeaderV3 parses "KEY:MINVERSION", where KEY is an API key number or
// name (case-insensitive, e.g. "OffsetFetch" or "9") that the built-in
// table knows and MINVERSION a non-negative version.
func ParseHeaderV3(s string) (key, minVersion int16, err error) {
	k, v, ok := strings.Cut(strings.TrimSpace(s), ":")
	if !ok {
		return 0, 0, fmt.Errorf("header v3 %q: want KEY:MINVERSION", s)
	}
	k, v = strings.TrimSpace(k), strings.TrimSpace(v)
	if k == "" {
		return 0, 0, fmt.Errorf("header v3 %q: empty API key", s)
	}
	if n, perr := strconv.ParseInt(k, 10, 16); perr == nil {
		key = int16(n)
		if _, known := LookupAPI(key); !known {
			return 0, 0, fmt.Errorf("header v3 %q: unknown API key %d", s, n)
		}
	} else {
		found := false
		for _, a := range apiTable {
			if a.Name != "" && strings.EqualFold(a.Name, k) {
				key, found = a.Key, true
				break
			}
		}
		if !found {
			return 0, 0, fmt.Errorf("header v3 %q: unknown API %q", s, k)
		}
	}
	n, perr := strconv.ParseInt(v, 10, 16)
	if perr != nil || n < 0 {
		return 0, 0, fmt.Errorf("header v3 %q: version %q is not a number from 0 to 32767", s, v)
	}
	return key, int16(n), nil
}
