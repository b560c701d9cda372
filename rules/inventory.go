package rules

import (
	"bytes"
	"net/netip"
	"slices"
	"sort"

	"github.com/kidscope/kidscope/decode"
)

// instanceState is what the engine knows of one client instance ID.
// Its lists are slices searched from end to end: they hold a few entries
// each (at most maxPerInstance), and tens of thousands of instances with
// four small maps each cost more memory than anything else the engine
// kept.
type instanceState struct {
	id          decode.UUID
	clientIDs   []string
	addrs       []addrFrame // first frame per client address
	brokers     []netip.AddrPort
	conns       []int
	first, last decode.Where
	seq         int64 // when it was last seen, in requests
}

type addrFrame struct {
	addr  netip.Addr
	frame Frame
}

// addOnce appends v to list unless it is there or the list is full.
func addOnce[T comparable](list []T, v T) []T {
	if len(list) < maxPerInstance && !slices.Contains(list, v) {
		list = append(list, v)
	}
	return list
}

// maxPerInstance caps each list an instance keeps (client IDs, addresses,
// brokers, connections): a long capture must not grow them without end.
const maxPerInstance = 64

// evictInstances forgets the least recently seen quarter of the
// instances, when the inventory is full.
func (e *Engine) evictInstances() {
	seqs := make([]int64, 0, len(e.instances))
	for _, in := range e.instances {
		seqs = append(seqs, in.seq)
	}
	sort.Slice(seqs, func(i, j int) bool { return seqs[i] < seqs[j] })
	cut := seqs[len(seqs)/4]
	for id, in := range e.instances {
		if in.seq <= cut {
			delete(e.instances, id)
			e.droppedInstances++
		}
	}
}

// splitKey names a pair of instance IDs of one client (IP and ClientId).
type splitKey struct {
	addr     netip.Addr
	clientID string
	a, b     decode.UUID
}

// instanceSeen updates the inventory with a request that carries a header
// ID and returns the §7 findings it causes.
func (e *Engine) instanceSeen(cs *connState, ev *decode.Event, x headerID) []cand {
	if !x.carries || x.id.IsOne() {
		return nil
	}
	in := e.instances[x.id]
	if in == nil {
		if len(e.instances) >= e.opt.MaxInstances {
			e.evictInstances()
		}
		in = &instanceState{id: x.id, first: ev.At}
		e.instances[x.id] = in
	}
	in.last = ev.At
	in.seq = e.seq
	e.seq++
	if cs.clientID != "" {
		in.clientIDs = addOnce(in.clientIDs, cs.clientID)
	}
	in.brokers = addOnce(in.brokers, cs.info.Key.Broker)
	in.conns = addOnce(in.conns, cs.info.ID)
	var out []cand
	addr := cs.info.Key.Client.Addr()
	known := slices.ContainsFunc(in.addrs, func(a addrFrame) bool { return a.addr == addr })
	if !known && len(in.addrs) < maxPerInstance {
		in.addrs = append(in.addrs, addrFrame{addr, frameOf(ev.At)})
		if len(in.addrs) == 2 {
			// A second address: reported once, as the list only grows.
			out = append(out, cand{rule: InstanceIDShared, expected: "one client address (" + in.addrs[0].addr.String() + ")",
				seen: x.id.String() + " also from " + addr.String(), related: []Frame{in.addrs[0].frame}})
		}
	}
	// instance-id-split: another open connection of the same client (IP
	// and ClientId) carries a different instance ID. Open connections are
	// indexed by client, with their IDs counted, so this costs the
	// client's distinct IDs, not every open connection.
	if cs.clientID != "" {
		k := clientKey{addr, cs.clientID}
		for y, use := range e.clients[k] {
			others := use.open
			if cs.indexed != nil && cs.firstID == y {
				others-- // this connection itself
			}
			if y == x.id || others <= 0 {
				continue
			}
			a, b := y, x.id
			if bytes.Compare(a[:], b[:]) > 0 {
				a, b = b, a
			}
			sk := splitKey{addr, cs.clientID, a, b}
			if e.splits[sk] || len(e.splits) >= maxSplits {
				continue
			}
			e.splits[sk] = true
			out = append(out, cand{rule: InstanceIDSplit, expected: y.String() + " (as its other open connection)",
				seen: x.id.String(), related: []Frame{use.first}})
		}
	}
	return out
}

// maxSplits caps the instance-id-split pairs remembered (each is reported
// once).
const maxSplits = 100000

// clientKey is one client: its IP address and ClientId.
type clientKey struct {
	addr     netip.Addr
	clientID string
}

// idUse counts a client's open connections that carry one instance ID.
type idUse struct {
	open  int
	first Frame // the first frame of the first such connection
}

// indexClient records a connection under its client once it shows both a
// ClientId and an instance ID.
func (e *Engine) indexClient(cs *connState) {
	if cs.indexed != nil || cs.clientID == "" || !cs.hasFirstID {
		return
	}
	k := &clientKey{cs.info.Key.Client.Addr(), cs.clientID}
	cs.indexed = k
	ids := e.clients[*k]
	if ids == nil {
		ids = map[decode.UUID]*idUse{}
		e.clients[*k] = ids
	}
	u := ids[cs.firstID]
	if u == nil {
		u = &idUse{first: frameOf(cs.info.First)}
		ids[cs.firstID] = u
	}
	u.open++
}

// unindexClient removes a closing connection from its client's index.
func (e *Engine) unindexClient(cs *connState) {
	if cs.indexed == nil {
		return
	}
	ids := e.clients[*cs.indexed]
	if u := ids[cs.firstID]; u != nil {
		if u.open--; u.open <= 0 {
			delete(ids, cs.firstID)
		}
	}
	if len(ids) == 0 {
		delete(e.clients, *cs.indexed)
	}
}

func (e *Engine) instanceList() []Instance {
	var out []Instance
	for _, in := range e.instances {
		i := Instance{ID: in.id, First: in.first, Last: in.last}
		i.ClientIDs = slices.Clone(in.clientIDs)
		sort.Strings(i.ClientIDs)
		for _, a := range in.addrs {
			i.Addresses = append(i.Addresses, a.addr)
		}
		sort.Slice(i.Addresses, func(x, y int) bool { return i.Addresses[x].Less(i.Addresses[y]) })
		i.Brokers = slices.Clone(in.brokers)
		sort.Slice(i.Brokers, func(x, y int) bool { return i.Brokers[x].Compare(i.Brokers[y]) < 0 })
		i.Connections = slices.Clone(in.conns)
		sort.Ints(i.Connections)
		if g, ok := e.tele.got.get(headerKey(in.id)); ok {
			i.TelemetryIDs = append(i.TelemetryIDs, g.id)
		}
		out = append(out, i)
	}
	sort.Slice(out, func(a, b int) bool {
		if out[a].First.File != out[b].First.File {
			return out[a].First.File < out[b].First.File
		}
		return out[a].First.Frame < out[b].First.Frame
	})
	return out
}

// brokerState is what the engine knows of one broker endpoint.
type brokerState struct {
	enforce, ignore []Frame
	connections     int
	telemetry       bool // its ApiVersions offered keys 71 and 72
	telemetryKnown  bool
}

// offersTelemetry records whether an ApiVersions answer offered the
// telemetry APIs (brokers offer them only with a metrics plugin).
func (b *brokerState) offersTelemetry(ranges []decode.VersionRange) {
	var get, push bool
	for _, r := range ranges {
		get = get || r.Key == decode.KeyGetTelemetrySubscriptions
		push = push || r.Key == decode.KeyPushTelemetry
	}
	b.telemetry, b.telemetryKnown = get && push, true
}

func (e *Engine) broker(ep netip.AddrPort) *brokerState {
	b := e.brokers[ep]
	if b == nil {
		b = &brokerState{}
		e.brokers[ep] = b
	}
	return b
}

func (e *Engine) brokerList() []Broker {
	var out []Broker
	for ep, b := range e.brokers {
		br := Broker{Endpoint: ep, EnforceFrames: b.enforce, IgnoreFrames: b.ignore, Connections: b.connections,
			Telemetry: b.telemetry, TelemetryKnown: b.telemetryKnown}
		switch {
		case len(b.enforce) > 0 && len(b.ignore) > 0:
			br.Verdict = VerdictMixed
		case len(b.enforce) > 0:
			br.Verdict = VerdictEnforces
		case len(b.ignore) > 0:
			br.Verdict = VerdictIgnores
		}
		out = append(out, br)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Endpoint.Compare(out[j].Endpoint) < 0 })
	return out
}

// matrix counts connections per client kind and broker verdict.
func (e *Engine) matrix(conns []Connection, brokers []Broker) Matrix {
	verdict := map[netip.AddrPort]Verdict{}
	for _, b := range brokers {
		verdict[b.Endpoint] = b.Verdict
	}
	var m Matrix
	for _, c := range conns {
		if c.NotKafka != "" || c.Requests == 0 {
			continue
		}
		row := 0
		if c.NewClient {
			row = 1
		}
		col := 2
		switch verdict[c.Key.Broker] {
		case VerdictIgnores:
			col = 0
		case VerdictEnforces:
			col = 1
		}
		m.Cells[row][col]++
	}
	return m
}
