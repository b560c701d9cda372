package samples

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"

	"github.com/kidscope/kidscope/samples/netsim"
)

// The large clean capture: many clients of three brokers, every kind of
// client the small scenarios show, all of them right. It must produce no
// finding at all, not even an info one.

const (
	largeClients = 120 // clients, 20 of each kind
	largeRounds  = 30  // workload rounds per connection
)

func largeScenarios() []Scenario {
	return []Scenario{{
		Name: "large-clean",
		Description: fmt.Sprintf("%d clients of three brokers (seed, accepted and old producers and consumers, classic and KIP-848 groups, telemetry v0 and v1), "+
			"interleaved; everything right: no finding at all", largeClients),
		Format: netsim.PcapNG, Seed: 900, Large: true,
		Brokers: []Broker{{broker1, Unknown}, {broker2, Unknown}, {broker3, Unknown}},
		Gen:     genLarge,
	}}
}

// client kinds of the large capture.
const (
	seedProducer = iota
	oldProducer
	seedConsumer // classic group
	acceptedClient
	oldConsumer     // classic group
	seedCGHConsumer // KIP-848 group, ConsumerGroupHeartbeat v1
	kinds
)

// largeConn is a connection with the time its actions run at.
type largeConn struct {
	conn   Conn
	start  int // tick of its open
	period int // ticks between its actions
}

func genLarge() ([]Conn, []int) {
	brokers := []netip.AddrPort{broker1, broker2, broker3}
	var lcs []largeConn
	for c := range largeClients {
		kind := c % kinds
		ip := netip.AddrFrom4([4]byte{10, 0, 10, byte(10 + c)})
		id := uid(uint64(10000 + c))
		h := NoTag
		prof := NoProfile
		if kind == seedProducer || kind == seedConsumer || kind == seedCGHConsumer {
			h, prof = Tag(id), Seed
		}
		name := [...]string{"producer", "legacy-producer", "consumer", "app", "legacy-consumer", "stream-consumer"}[kind] + "-" + strconv.Itoa(c)
		topic := "orders-" + strconv.Itoa(c%5)
		groupName := "group-" + strconv.Itoa(c)
		memberID := name + "-" + uid(uint64(20000+c)).RFC4122()
		cghMember := uid(uint64(40000 + c)).String() // KIP-1082: client-generated
		boot := c % 3
		port := func(k int) uint16 { return uint16(33000 + c*37 + k*11) }
		start := c * 3

		// The bootstrap connection: start-up and telemetry.
		steps := []Step{apiVersions(h), metadata(h, topic)}
		switch kind {
		case seedProducer, seedConsumer, seedCGHConsumer:
			steps = append(steps, gtsV0(h, id, id))
			for k := range 3 {
				steps = append(steps, pushV0(h, id, false, k+1, errNone))
			}
		case oldProducer, oldConsumer:
			x := uid(uint64(30000 + c))
			steps = append(steps, gtsV0(NoTag, ZERO, x))
			for k := range 3 {
				steps = append(steps, pushV0(NoTag, x, false, k+1, errNone))
			}
		case acceptedClient:
			// One connection does everything: the v3 requests first (F,
			// then N with neither ID nor ClientId), then v2-header traffic.
			steps = append(steps, gtsV1(Tag(id), errNone), pushV1(NoTag, false, 1, errNone).nullCID(),
				initProducerID(NoTag))
			for r := range largeRounds {
				steps = append(steps, produce(topic, int64(r*20), 20))
				if r%8 == 7 {
					steps = append(steps, pushV1(NoTag, false, r/8+2, errNone).nullCID())
				}
			}
		}
		if kind == seedConsumer || kind == oldConsumer || kind == seedCGHConsumer {
			steps = append(steps, findCoordinator(h, groupName))
		}
		lcs = append(lcs, largeConn{Conn{Client: netip.AddrPortFrom(ip, port(0)), Broker: brokers[boot], ClientID: name,
			Profile: prof, Steps: steps}, start, 7})
		if kind == acceptedClient {
			continue
		}

		// The work: two more connections, one to each other broker; the
		// first of them is also the group coordinator's.
		for k := 1; k <= 2; k++ {
			b := (boot + k) % 3
			steps := []Step{apiVersions(h)}
			if k == 1 {
				switch kind {
				case seedConsumer, oldConsumer:
					steps = append(steps,
						joinRequired(h, 7, groupName, memberID),
						joinWith(h, 7, groupName, memberID),
						syncGroup(h, groupName, memberID),
						offsetFetch(h, groupName, topic))
				case seedCGHConsumer:
					steps = append(steps, cgh(h, 1, groupName, cghMember, 0, cghMember, 1))
				case seedProducer, oldProducer:
					steps = append(steps, initProducerID(h))
				}
			}
			for r := range largeRounds {
				switch kind {
				case seedProducer:
					steps = append(steps, produceV(h, 9, topic, int64(r*25), 25))
				case oldProducer:
					steps = append(steps, produce(topic, int64(r*25), 25))
				case seedConsumer, seedCGHConsumer:
					steps = append(steps, fetchV(h, 12, topic, int64(r*10), 10))
				case oldConsumer:
					steps = append(steps, fetch(topic, int64(r*10), 10))
				}
				if k == 1 && r%6 == 5 {
					switch kind {
					case seedConsumer, oldConsumer:
						steps = append(steps, heartbeat(h, groupName, memberID),
							offsetCommit(h, groupName, memberID, topic, int64(r*10+10)))
					case seedCGHConsumer:
						steps = append(steps, cgh(h, 1, groupName, cghMember, 1, cghMember, 1))
					}
				}
			}
			if k == 1 && (kind == seedConsumer || kind == oldConsumer) {
				steps = append(steps, leaveGroup(h, groupName, memberID))
				if kind == seedConsumer {
					// Header v1: exempt, cannot carry the ID.
					steps = append(steps, offsetDelete(groupName, topic))
				}
			}
			lcs = append(lcs, largeConn{Conn{Client: netip.AddrPortFrom(ip, port(k)), Broker: brokers[b], ClientID: name,
				Profile: prof, Steps: steps}, start + 5 + k, 5 + k})
		}
	}

	// Run every connection's actions at start, start+period, ...: the
	// schedule is their order in time.
	type action struct{ tick, conn int }
	var acts []action
	conns := make([]Conn, len(lcs))
	for i, lc := range lcs {
		conns[i] = lc.conn
		for a := range len(lc.conn.Steps) + 2 {
			acts = append(acts, action{lc.start + a*lc.period, i})
		}
	}
	slices.SortStableFunc(acts, func(a, b action) int {
		if a.tick != b.tick {
			return a.tick - b.tick
		}
		return a.conn - b.conn
	})
	schedule := make([]int, len(acts))
	for i, a := range acts {
		schedule[i] = a.conn
	}
	return conns, schedule
}
