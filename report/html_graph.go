package report

import (
	"net/netip"
	"strings"

	"github.com/kidscope/kidscope/report/internal/textdoc"
)

// The instance inventory as a graph: each client instance ID on the left,
// each broker on the right, a line where the instance talked to the
// broker. It is drawn only where it helps: more than one instance or
// broker, and few enough of both to read.
const (
	graphMaxNodes = 40
	graphRow      = 34
	graphWidth    = 760
	graphLeftX    = 300
	graphRightX   = 540
)

type htmlGraph struct {
	Height    int
	Instances []graphNode
	Brokers   []graphNode
	Edges     []graphEdge
}

type graphNode struct {
	X, Y       int
	Label, Sub string
	Color      string
}

type graphEdge struct {
	X1, Y1, X2, Y2 int
	Color          string
}

func instanceGraph(a *Analysis, st *docStyle, colors *idColors) *htmlGraph {
	ins := a.Result.Instances
	brokerY := map[netip.AddrPort]int{}
	var brokers []netip.AddrPort
	for _, in := range ins {
		for _, b := range in.Brokers {
			if _, ok := brokerY[b]; !ok {
				brokerY[b] = 0
				brokers = append(brokers, b)
			}
		}
	}
	if len(ins) == 0 || len(ins) > graphMaxNodes || len(brokers) > graphMaxNodes || (len(ins) < 2 && len(brokers) < 2) {
		return nil
	}
	g := &htmlGraph{}
	rows := max(len(ins), len(brokers))
	g.Height = rows*graphRow + 20
	// Each column is centred on the taller one.
	top := func(n int) int { return 20 + (rows-n)*graphRow/2 }
	for i, b := range brokers {
		y := top(len(brokers)) + i*graphRow
		brokerY[b] = y
		g.Brokers = append(g.Brokers, graphNode{X: graphRightX, Y: y, Label: b.String()})
	}
	for i, in := range ins {
		y := top(len(ins)) + i*graphRow
		c := colors.color(in.ID)
		sub := make([]string, 0, len(in.ClientIDs))
		for _, id := range in.ClientIDs {
			sub = append(sub, textdoc.Shorten(shown(id), 24))
		}
		g.Instances = append(g.Instances, graphNode{X: graphLeftX, Y: y, Label: st.uuid(in.ID), Sub: strings.Join(sub, ", "), Color: c})
		for _, b := range in.Brokers {
			g.Edges = append(g.Edges, graphEdge{X1: graphLeftX, Y1: y, X2: graphRightX, Y2: brokerY[b], Color: c})
		}
	}
	return g
}
