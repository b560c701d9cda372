package rules

import (
	"bytes"
	"net/netip"
	"slices"
	"sort"

	"github.com/kidscope/kidscope/decode"
	"github.com/kidscope/kidscope/kafka"
)

// The inventory's rules (docs/design/rules.md §7), about client instance IDs across
// connections.
const (
	InstanceIDShared = "instance-id-shared"
	InstanceIDSplit  = "instance-id-split"
)

var inventoryRules = []Rule{
	{ID: InstanceIDShared, Severity: Warning, Group: GroupInstances, CrossConnection: true,
		Summary: "one client instance ID is used from two or more client IP addresses",
		Detail: "One client instance ID is seen in request headers from two or more client IP addresses. " +
			"Reported once per ID, on the first connection from the second address, with a frame of the first as related.",
		Why: "A client instance ID must name one client instance. Shared by several hosts, it merges different machines in whatever is kept by instance ID " +
			"(logs, client telemetry, troubleshooting), and their telemetry collides. " +
			"The usual cause is an ID baked into a container image or copied with a configuration file.",
		Fix: "Client: make the instance ID at run time, in each process (a random UUID when the client starts), never from configuration or an image. " +
			"If the addresses are one host (several interfaces, or NAT that changes), the finding can be ignored.",
		Example: "inst-shared"},
	{ID: InstanceIDSplit, Severity: Info, Group: GroupInstances, CrossConnection: true,
		Summary: "one client (same IP and ClientId) has overlapping connections with different instance IDs",
		Detail:  "One client, by its IP address and ClientId, has connections open at the same time that carry different instance IDs.",
		Why: "Nothing breaks: it is usually several client instances in one process (a producer and a consumer, or several consumers) that share a ClientId. " +
			"Traced by ClientId the process shows as one client, traced by instance ID as several.",
		Fix: "Nothing to fix when the process runs several clients; distinct ClientIds make the logs easier to read. " +
			"If it is one client, it changes its ID between connections: make the ID once per client instance.",
		Example: "inst-split"},
}

// inventoryChecker keeps the inventory of client instance IDs (where each
// was seen) and applies the rules about them across connections.
type inventoryChecker struct {
	max       int // instances kept, the most recently seen
	instances map[kafka.UUID]*instanceState
	seq       int64 // requests carrying an instance ID, for eviction order
	splits    map[splitKey]bool
	clients   map[clientKey]map[kafka.UUID]*idUse // open connections by client
	dropped   int64                               // instances forgotten
}

func newInventoryChecker(maxInstances int) *inventoryChecker {
	return &inventoryChecker{max: maxInstances, instances: map[kafka.UUID]*instanceState{},
		splits: map[splitKey]bool{}, clients: map[clientKey]map[kafka.UUID]*idUse{}}
}

func (*inventoryChecker) rules() []Rule { return inventoryRules }

func (v *inventoryChecker) open(*conn) connChecker { return &inventoryConn{v: v} }

// inventoryConn is the inventory's part of one connection: where its
// client is indexed.
type inventoryConn struct {
	passive
	v       *inventoryChecker
	indexed *clientKey // where index put it
	// counted are the instances whose full list of connections could not
	// take this one, but whose count has it.
	counted []kafka.UUID
}

func (ic *inventoryConn) request(c *conn, q *request, ev *decode.Event) []cand {
	out := ic.instanceSeen(c, q.x, ev.At)
	ic.index(c)
	return out
}

func (ic *inventoryConn) close(c *conn, _ CloseInfo) []cand {
	ic.unindex(c)
	return nil
}

// instanceState is what the engine knows of one client instance ID.
// Its lists are slices searched from end to end: they hold a few entries
// each (at most MaxPerInstance), and tens of thousands of instances with
// four small maps each cost more memory than anything else the engine
// kept.
type instanceState struct {
	id          kafka.UUID
	clientIDs   []string
	addrs       []addrFrame // first frame per client address
	brokers     []netip.AddrPort
	conns       []int
	connCount   int64 // connections, listed in conns or not
	first, last kafka.FrameRef
	seq         int64 // when it was last seen, in requests
}

type addrFrame struct {
	addr  netip.Addr
	frame kafka.FrameRef
}

// addOnce appends v to list unless it is there or the list is full.
func addOnce[T comparable](list []T, v T) []T {
	if len(list) < MaxPerInstance && !slices.Contains(list, v) {
		list = append(list, v)
	}
	return list
}

// evictInstances forgets the least recently seen quarter of the
// instances, when the inventory is full.
func (v *inventoryChecker) evictInstances() {
	seqs := make([]int64, 0, len(v.instances))
	for _, in := range v.instances {
		seqs = append(seqs, in.seq)
	}
	sort.Slice(seqs, func(i, j int) bool { return seqs[i] < seqs[j] })
	cut := seqs[len(seqs)/4]
	for id, in := range v.instances {
		if in.seq <= cut {
			delete(v.instances, id)
			v.dropped++
		}
	}
}

// countConn lists and counts the connection for the instance once; when
// the instance's list is full, the connection remembers that it was
// counted (a connection with more than MaxPerInstance such instances may
// be counted again).
func (ic *inventoryConn) countConn(in *instanceState, id int) {
	if slices.Contains(in.conns, id) {
		return
	}
	if len(in.conns) < MaxPerInstance {
		in.conns = append(in.conns, id)
		in.connCount++
		return
	}
	if slices.Contains(ic.counted, in.id) {
		return
	}
	in.connCount++
	if len(ic.counted) < MaxPerInstance {
		ic.counted = append(ic.counted, in.id)
	}
}

// splitKey names a pair of instance IDs of one client (IP and ClientId).
type splitKey struct {
	addr     netip.Addr
	clientID string
	a, b     kafka.UUID
}

// instanceSeen updates the inventory with a request that carries a header
// ID and returns the §7 findings it causes.
func (ic *inventoryConn) instanceSeen(c *conn, x headerID, at kafka.FrameRef) []cand {
	v := ic.v
	if !x.carries || x.id.IsOne() {
		return nil
	}
	in := v.instances[x.id]
	if in == nil {
		if len(v.instances) >= v.max {
			v.evictInstances()
		}
		in = &instanceState{id: x.id, first: at}
		v.instances[x.id] = in
	}
	in.last = at
	in.seq = v.seq
	v.seq++
	if c.clientID != "" {
		in.clientIDs = addOnce(in.clientIDs, c.clientID)
	}
	in.brokers = addOnce(in.brokers, c.info.Endpoints.Broker)
	ic.countConn(in, c.info.ID)
	var out []cand
	addr := c.info.Endpoints.Client.Addr()
	known := slices.ContainsFunc(in.addrs, func(a addrFrame) bool { return a.addr == addr })
	if !known && len(in.addrs) < MaxPerInstance {
		in.addrs = append(in.addrs, addrFrame{addr, at})
		if len(in.addrs) == 2 {
			// A second address: reported once, as the list only grows.
			out = append(out, cand{rule: InstanceIDShared, expected: Value{Kind: ValueOneAddress, Addr: in.addrs[0].addr},
				seen: Value{Kind: ValueAlsoFrom, ID: x.id, Addr: addr}, related: []Related{{in.addrs[0].frame, RoleFirstSeen}}})
		}
	}
	// instance-id-split: another open connection of the same client (IP
	// and ClientId) carries a different instance ID. Open connections are
	// indexed by client, with their IDs counted, so this costs the
	// client's distinct IDs, not every open connection.
	if c.clientID != "" {
		k := clientKey{addr, c.clientID}
		for y, use := range v.clients[k] {
			others := use.open
			if ic.indexed != nil && c.firstID == y {
				others-- // this connection itself
			}
			if y == x.id || others <= 0 {
				continue
			}
			a, b := y, x.id
			if bytes.Compare(a[:], b[:]) > 0 {
				a, b = b, a
			}
			sk := splitKey{addr, c.clientID, a, b}
			if v.splits[sk] || len(v.splits) >= maxSplits {
				continue
			}
			v.splits[sk] = true
			out = append(out, cand{rule: InstanceIDSplit, expected: Value{Kind: ValueOtherConnection, ID: y},
				seen: Value{Kind: ValueID, ID: x.id}, related: []Related{{use.first, RoleOtherConnection}}})
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
	first kafka.FrameRef // the first frame of the first such connection
}

// index records a connection under its client once it shows both a
// ClientId and an instance ID.
func (ic *inventoryConn) index(c *conn) {
	if ic.indexed != nil || c.clientID == "" || !c.hasFirstID {
		return
	}
	k := &clientKey{c.info.Endpoints.Client.Addr(), c.clientID}
	ic.indexed = k
	ids := ic.v.clients[*k]
	if ids == nil {
		ids = map[kafka.UUID]*idUse{}
		ic.v.clients[*k] = ids
	}
	u := ids[c.firstID]
	if u == nil {
		u = &idUse{first: c.info.First}
		ids[c.firstID] = u
	}
	u.open++
}

// unindex removes a closing connection from its client's index.
func (ic *inventoryConn) unindex(c *conn) {
	if ic.indexed == nil {
		return
	}
	ids := ic.v.clients[*ic.indexed]
	if u := ids[c.firstID]; u != nil {
		if u.open--; u.open <= 0 {
			delete(ids, c.firstID)
		}
	}
	if len(ids) == 0 {
		delete(ic.v.clients, *ic.indexed)
	}
	ic.indexed = nil
}

// list is the inventory, with the telemetry ID each instance got as
// telemetryID says.
func (v *inventoryChecker) list(telemetryID func(inst kafka.UUID) (kafka.UUID, bool)) []Instance {
	var out []Instance
	for _, in := range v.instances {
		i := Instance{ID: in.id, First: in.first, Last: in.last, ConnectionCount: in.connCount}
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
		if t, ok := telemetryID(in.id); ok {
			i.TelemetryIDs = append(i.TelemetryIDs, t)
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
