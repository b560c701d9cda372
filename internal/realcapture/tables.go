package realcapture

import (
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Tables writes, from the sidecars in dir, the Markdown tables of
// testdata/real/README.md: the files, the versions of what made them, and
// the requests in each file by API key, with their versions.
func Tables(dir string) (string, error) {
	files, metas, err := Captures(dir)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString("| file | client | broker | role | bytes | frames | connections | terminating pushes |\n|---|---|---|---|---|---|---|---|\n")
	versions := map[string]bool{}
	for _, f := range files {
		m := metas[f]
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %d | %d | %d | %d |\n", filepath.Base(f), m.Client, m.Broker, m.Role,
			m.Bytes, m.Frames, m.Connections, m.TerminatingPushes)
		versions[m.Client+"\t"+m.ClientVersion] = true
		versions[m.Broker+"\t"+m.BrokerVersion] = true
	}
	b.WriteString("\n| client or broker | version |\n|---|---|\n")
	vs := make([]string, 0, len(versions))
	for v := range versions {
		vs = append(vs, v)
	}
	sort.Strings(vs)
	for _, v := range vs {
		name, version, _ := strings.Cut(v, "\t")
		fmt.Fprintf(&b, "| %s | %s |\n", name, version)
	}
	b.WriteString("\n| file | requests: key name ×count (versions) |\n|---|---|\n")
	for _, f := range files {
		m := metas[f]
		keys := make([]int, 0, len(m.Requests))
		for k := range m.Requests {
			n, err := strconv.Atoi(k)
			if err != nil {
				return "", fmt.Errorf("%s: request key %q", f, k)
			}
			keys = append(keys, n)
		}
		sort.Ints(keys)
		var cells []string
		for _, k := range keys {
			r := m.Requests[strconv.Itoa(k)]
			var v []string
			for _, x := range r.Versions {
				v = append(v, "v"+strconv.Itoa(int(x)))
			}
			cells = append(cells, fmt.Sprintf("%d %s ×%d (%s)", k, r.Name, r.Count, strings.Join(v, ",")))
		}
		fmt.Fprintf(&b, "| `%s` | %s |\n", filepath.Base(f), strings.Join(cells, "; "))
	}
	return b.String(), nil
}
