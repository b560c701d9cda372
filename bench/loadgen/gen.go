package main

import (
	"bufio"
	"fmt"
	"io"
	"math/bits"
	"math/rand/v2"
	"time"

	"github.com/kidscope/kidscope/kafka"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const (
	toBroker = 0 // the direction of requests
	toClient = 1 // the direction of responses

	brokerPort = 9092
)

// config is what the flags say.
type config struct {
	target      int64     // stop starting exchanges once the file is this large
	conns       int       // connections open at once at the peak, all kinds
	seed        uint64    //
	midstream   int       // connections open before the capture starts
	closes      int       // connections closed during the capture (reconnects and restarts)
	brokers     int       //
	ooo         float64   // fraction of data segments overtaken by the next one
	dup         float64   // fraction of data segments retransmitted
	rate        int64     // capture-time bytes per second
	concurrency int       // exchanges in flight at once
	groupWeight int       // group connections are picked this many times as often
	noPlants    bool      // leave out the planted violations
	tls         *tlsSuite // every connection is TLS 1.3 with this suite; nil: plaintext
}

// role is what a connection does in the steady state, as clients split
// their connections (one per broker and purpose).
type role int

const (
	roleProducer role = iota // Produce
	roleFetcher              // Fetch
	roleGroup                // classic group member: Heartbeat, OffsetCommit
	roleGroup848             // KIP-848 member: ConsumerGroupHeartbeat, OffsetCommit
)

// app is what a client instance is.
type app int

const (
	appProducer    app = iota // producer connections to 1–3 brokers
	appConsumer               // fetch connections + a classic group connection
	appConsumer848            // fetch connections + a KIP-848 group connection
)

// instance is one client instance (one Kafka client object in one
// process): its connections share the client ID, the header instance ID
// (new clients) and the telemetry ID.
type instance struct {
	n         int
	app       app
	host      *host
	clientID  string
	software  [2]string
	newClient bool       // sends the header instance ID (KIP-1313, seed profile)
	hid       kafka.UUID // the header instance ID (new clients)
	teleID    kafka.UUID // the telemetry client instance ID (ZERO until assigned, old clients)
	subID     int32
	primary   *conn // the connection it sends telemetry on
	live      int   // open connections
	lastPush  int64
	pushes    int
	topics    []int
	// consumer group
	group      string
	member     string
	generation int32 // classic generation, or KIP-848 member epoch
	plant      *plant
}

type tp struct {
	topic int
	part  int32
}

// partState is one partition a connection produces to or consumes.
type partState struct {
	topic  int
	part   int32
	offset int64 // fetch position / committed offset
	seq    int32 // producer sequence
}

// conn is one TCP connection.
type conn struct {
	inst      *instance
	role      role
	cli, srv  *host
	cport     uint16
	seq       [2]uint32 // next sequence number of each direction
	ts        [2]uint32 // last TCP timestamp value each direction sent
	win       [2]uint16
	corr      int32
	closed    bool
	midstream bool
	teleReady bool // a GetTelemetrySubscriptions was answered on it
	parts     []partState
	pid       int64 // producer ID
	sessionID int32 // fetch session
	sessEpoch int32
	firstData int64    // frame of its first packet with data or a SYN: where kidscope starts it
	seen      bool     // a packet of it is in the capture
	tls       *tlsConn // its record keys once the TLS handshake is made (-tls)
}

func (c *conn) clientAddr() string {
	return fmt.Sprintf("%d.%d.%d.%d:%d", c.cli.ip[0], c.cli.ip[1], c.cli.ip[2], c.cli.ip[3], c.cport)
}

func (c *conn) brokerAddr() string {
	return fmt.Sprintf("%d.%d.%d.%d:%d", c.srv.ip[0], c.srv.ip[1], c.srv.ip[2], c.srv.ip[3], brokerPort)
}

// message is one Kafka frame (or, with -tls, a TLS handshake flight or
// alert: hs).
type message struct {
	dir      int
	data     []byte
	wire     []byte // what is sent: data sealed in TLS records (-tls); nil: data as it is
	hs       bool   // not a Kafka message: TLS handshake messages or an alert
	ctype    byte   // the TLS content type data is sealed as; 0: application data
	key, ver int16
	corr     int32
	resp     bool
	segsLeft int    // first transmissions of its segments not yet written
	partial  bool   // some of its bytes fell before the capture start
	frame    int64  // the frame where it became complete
	plant    *plant // the planted violation this request is
}

const (
	stepData = iota
	stepSYN
	stepSYNACK
	stepACK // the client's pure ACK ending the handshake or the close
	stepFIN
)

// step is one thing an exchange does.
type step struct {
	kind int
	dir  int // stepFIN
	m    *message
}

// exchange is a run of steps on one connection; its packets are written
// interleaved with those of the other exchanges in flight.
type exchange struct {
	c        *conn
	steps    []step
	next     int
	q        []queued
	qi       int
	suppress int  // packets to leave out: they were sent before the capture started
	quiet    bool // no reordering or retransmission
	after    func()
}

// queued is a packet made but not yet written.
type queued struct {
	dir      int
	flags    uint8
	seq, ack uint32
	payload  []byte
	m        *message
	first    bool // the first transmission of these bytes
}

type topic struct {
	name  string
	id    [16]byte
	parts int32
}

var topicNames = []string{
	"orders", "payments", "shipments", "inventory.events", "clickstream", "user-profile-changes",
	"fraud.scores", "audit-log", "email.outbox", "search.index-updates", "pricing", "carts",
	"sessions", "telemetry.raw", "billing.invoices", "notifications", "reco.features", "ledger",
	"returns", "warehouse.scans", "ads.impressions", "ads.clicks", "support.tickets", "cdc.customers",
}

var software = [][2]string{
	{"apache-kafka-java", "3.9.1"}, {"apache-kafka-java", "4.1.0"}, {"kgo", "v1.19.5"},
	{"librdkafka", "2.11.0"}, {"confluent-kafka-go", "2.11.0"}, {"kafka-python", "2.2.15"},
}

// stats are the counts the summary and the expectations report.
type stats struct {
	dataSegs, pureAcks, control, ooo, dups, suppressed int64
	reqs, resps                                        [128]int64 // whole messages by API key
	orphans                                            int64      // whole responses to requests before the capture
	connections, midstream, reconnects, restarts       int        // connections: those with a packet in the capture
}

type gen struct {
	cfg    config
	rng    *rand.Rand
	pw     *pcapWriter
	now    int64 // capture time of the next packet, ns
	start  int64
	nsPerB float64

	pool     []byte // random bytes: record values, keys, telemetry payloads
	brokers  []*host
	hosts    []*host
	topics   []topic
	apiKeys  []kmsg.ApiVersionsResponseApiKey
	logEnd   map[tp]int64
	nextInst int

	setupQ   []*conn
	idle     []*conn
	active   []*exchange
	closeAt  []int64
	nclosed  int
	plants   []*plant
	mids     []*conn // the connections open before the capture
	tls      *tlsState
	stopping bool
	st       stats
	frees    [][]byte // message buffers of finished exchanges, to reuse
	body     []byte   // scratch: the body being encoded
	recs     []byte   // scratch: record batches
	err      error
	// onMessage, when set, sees every message that becomes whole in the
	// capture (the tests check them with kmsg).
	onMessage func(c *conn, m *message)
}

// generate writes the load to w and returns what the capture holds.
func generate(cfg config, w io.Writer) (*gen, error) {
	return generateWith(cfg, w, nil)
}

// generateWith is generate with a hook on every whole message.
func generateWith(cfg config, w io.Writer, onMessage func(*conn, *message)) (*gen, error) {
	bw := bufio.NewWriterSize(w, 1<<20)
	pw, err := newPcapWriter(bw)
	if err != nil {
		return nil, err
	}
	g := &gen{
		cfg:    cfg,
		rng:    rand.New(rand.NewPCG(cfg.seed, 0x6c6f616467656e31)),
		pw:     pw,
		now:    time.Date(2026, 3, 2, 14, 0, 0, 0, time.UTC).UnixNano(),
		nsPerB: 1e9 / float64(cfg.rate),
		logEnd: map[tp]int64{},
	}
	g.start = g.now
	g.onMessage = onMessage
	if cfg.tls != nil {
		g.tls = newTLSState(cfg.tls, cfg.seed)
	}
	g.init()
	g.run()
	if g.err == nil {
		g.err = bw.Flush()
	}
	return g, g.err
}

func (g *gen) init() {
	cfg := g.cfg
	g.pool = make([]byte, 8<<20)
	var key [32]byte
	for i := range key {
		key[i] = byte(g.rng.Uint32())
	}
	rand.NewChaCha8(key).Read(g.pool)
	for i := 0; i < cfg.brokers; i++ {
		g.brokers = append(g.brokers, newHost([4]byte{10, 20, 0, byte(11 + i)}, uint16(g.rng.Uint32()), g.rng.Uint32()))
	}
	nh := max(4, cfg.conns/6)
	for i := 0; i < nh; i++ {
		h := newHost([4]byte{10, byte(30 + i/62500), byte(i / 250 % 250), byte(1 + i%250)}, uint16(g.rng.Uint32()), g.rng.Uint32())
		h.nextPort = uint16(32768 + g.rng.IntN(20000))
		g.hosts = append(g.hosts, h)
	}
	for i, name := range topicNames {
		t := topic{name: name, parts: int32(6 * (1 + i%4))}
		u := g.uuid()
		copy(t.id[:], u[:])
		g.topics = append(g.topics, t)
	}
	g.apiKeys = apiKeyTable()
	if !cfg.noPlants {
		g.plants = newPlants()
	}

	// Connections open before the capture: the capture starts inside a
	// large Produce request (producers) or Fetch response (fetchers).
	for i := 0; i < cfg.midstream; i++ {
		r, a := roleProducer, appProducer
		if i%2 == 1 {
			r, a = roleFetcher, appConsumer
		}
		in := g.newInstance(a, i/2%2 == 0)
		c := g.newConn(in, r, g.brokers[i%len(g.brokers)])
		c.midstream = true
		c.seq = [2]uint32{g.rng.Uint32(), g.rng.Uint32()}
		c.ts = [2]uint32{c.cli.tsval(g.now - 1e6), c.srv.tsval(g.now - 1e6)}
		c.corr = int32(1000 + g.rng.IntN(1<<20))
		c.sessionID, c.sessEpoch = int32(g.rng.Uint32()>>1)|1, int32(g.rng.IntN(5000))
		if !in.newClient {
			in.teleID = g.uuid() // a broker gave it one before the capture
		}
		in.lastPush = g.now - int64(g.rng.IntN(pushIntervalMillis))*1e6
		// Two more exchanges follow at once: without a whole request after
		// the cut one, nothing in the capture would show the bytes are Kafka.
		var steps []step
		if r == roleFetcher {
			steps = g.fetch(c, 256<<10)
			steps = append(steps, g.fetch(c, 0)...)
			steps = append(steps, g.fetch(c, 0)...)
		} else {
			steps = g.produce(c, true)
			steps = append(steps, g.produce(c, false)...)
			steps = append(steps, g.produce(c, false)...)
		}
		// Leave out the first 1–30 packets: the capture starts inside the
		// Produce request, or after the Fetch request's single packet inside
		// its response (never right at the response's start: kidscope
		// cannot tell where a large response to an unseen request begins).
		suppress := 1 + g.rng.IntN(30)
		if r == roleFetcher {
			suppress = 2 + g.rng.IntN(29)
		}
		g.st.midstream++
		g.mids = append(g.mids, c)
		g.active = append(g.active, &exchange{c: c, steps: steps, suppress: suppress, quiet: true})
	}

	// The others start inside the capture, a client instance at a time.
	budget := cfg.conns - cfg.midstream - len(g.plants)
	for budget > 0 {
		var a app
		switch r := g.rng.IntN(20); {
		case r < 8:
			a = appProducer
		case r < 15:
			a = appConsumer
		default:
			a = appConsumer848
		}
		in := g.newInstance(a, g.rng.IntN(2) == 0)
		n := 1 + g.rng.IntN(3)
		b0 := g.rng.IntN(len(g.brokers))
		for i := 0; i < n && budget > 0; i++ {
			r := roleProducer
			if a != appProducer {
				r = roleFetcher
			}
			g.setupQ = append(g.setupQ, g.newConn(in, r, g.brokers[(b0+i)%len(g.brokers)]))
			budget--
		}
		if a != appProducer && budget > 0 {
			r := roleGroup
			if a == appConsumer848 {
				r = roleGroup848
			}
			g.setupQ = append(g.setupQ, g.newConn(in, r, g.brokers[g.rng.IntN(len(g.brokers))]))
			budget--
		}
	}
	for i := 1; i <= cfg.closes; i++ {
		g.closeAt = append(g.closeAt, g.cfg.target*int64(i)/int64(cfg.closes+1))
	}
}

// newInstance makes a client instance on a random host.
func (g *gen) newInstance(a app, newClient bool) *instance {
	g.nextInst++
	in := &instance{n: g.nextInst, app: a, host: g.hosts[g.rng.IntN(len(g.hosts))], newClient: newClient,
		software: software[g.rng.IntN(len(software))]}
	t0 := g.rng.IntN(len(g.topics))
	in.topics = []int{t0}
	if g.rng.IntN(3) == 0 {
		in.topics = append(in.topics, (t0+7)%len(g.topics))
	}
	kind := [...]string{"producer", "consumer", "consumer"}[a]
	in.clientID = fmt.Sprintf("%s-%s-%d", g.topics[t0].name, kind, in.n)
	if newClient {
		in.hid = g.uuid()
		in.teleID = in.hid
	}
	in.group = "cg-" + g.topics[t0].name
	return in
}

// newConn makes a connection of instance in to broker srv.
func (g *gen) newConn(in *instance, r role, srv *host) *conn {
	h := in.host
	h.nextPort++
	if h.nextPort < 32768 {
		h.nextPort = 32768
	}
	c := &conn{inst: in, role: r, cli: h, srv: srv, cport: h.nextPort,
		win: [2]uint16{uint16(500 + g.rng.IntN(20)), uint16(1400 + g.rng.IntN(100))}}
	c.pid = int64(g.rng.IntN(1 << 30))
	for _, t := range in.topics {
		np := 1 + g.rng.IntN(3)
		p0 := g.rng.Int32N(g.topics[t].parts)
		for j := 0; j < np; j++ {
			c.parts = append(c.parts, partState{topic: t, part: (p0 + int32(j)) % g.topics[t].parts,
				offset: int64(g.rng.IntN(1 << 24))})
		}
	}
	if in.primary == nil {
		in.primary = c
	}
	in.live++
	return c
}

// uuid is a random version-4 UUID.
func (g *gen) uuid() kafka.UUID {
	var u kafka.UUID
	for i := 0; i < 16; i += 8 {
		v := g.rng.Uint64()
		for j := 0; j < 8; j++ {
			u[i+j] = byte(v >> (8 * j))
		}
	}
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	return u
}

func (g *gen) random(n int) []byte {
	off := g.rng.IntN(len(g.pool) - n)
	return g.pool[off : off+n]
}

// alloc returns an empty buffer of at least n bytes, reused when one is free.
func (g *gen) alloc(n int) []byte {
	for i := len(g.frees) - 1; i >= 0 && i >= len(g.frees)-8; i-- {
		if b := g.frees[i]; cap(b) >= n {
			g.frees[i] = g.frees[len(g.frees)-1]
			g.frees = g.frees[:len(g.frees)-1]
			return b[:0]
		}
	}
	return make([]byte, 0, 1<<bits.Len(uint(n)))
}

// ---- scheduling ----

// run interleaves the packets of the exchanges in flight until the file is
// large enough and every planted violation is in, then lets the exchanges
// in flight finish, so that the capture ends with no message cut.
func (g *gen) run() {
	for g.err == nil {
		if !g.stopping && g.pw.bytes >= g.cfg.target && g.plantsDone() {
			g.stopping = true
		}
		for !g.stopping && len(g.active) < g.cfg.concurrency {
			x := g.nextExchange()
			if x == nil {
				break
			}
			g.active = append(g.active, x)
		}
		if len(g.active) == 0 {
			if !g.stopping {
				g.err = fmt.Errorf("no connection left to run an exchange on")
			}
			return
		}
		i := g.rng.IntN(len(g.active))
		x := g.active[i]
		for burst := 1 + g.rng.IntN(6); burst > 0 && g.err == nil; burst-- {
			q := g.nextPacket(x)
			if q == nil {
				g.active[i] = g.active[len(g.active)-1]
				g.active = g.active[:len(g.active)-1]
				g.finish(x)
				break
			}
			if x.suppress > 0 {
				x.suppress--
				g.st.suppressed++
				if q.m != nil && q.first {
					q.m.partial = true
				}
				continue
			}
			g.emit(x.c, q)
		}
	}
}

// finish ends an exchange: its buffers are reused, its connection is idle
// again (or closed).
func (g *gen) finish(x *exchange) {
	for _, s := range x.steps {
		if s.m != nil && s.m.resp && s.m.segsLeft == 0 && !s.m.partial {
			// A response whose request fell before the capture.
			if i := indexOf(x.steps, s.m); i > 0 && x.steps[i-1].m != nil && x.steps[i-1].m.partial {
				g.st.orphans++
				g.st.resps[s.m.key]-- // kidscope cannot tell its API
			}
		}
	}
	for _, s := range x.steps {
		// The handshake's buffers are small and share arrays: left to the
		// collector.
		if s.m != nil && !s.m.hs {
			for _, b := range [][]byte{s.m.data, s.m.wire} {
				if b != nil && cap(b) <= 4<<20 {
					g.frees = append(g.frees, b)
				}
			}
			s.m.data, s.m.wire = nil, nil
		}
	}
	if len(g.frees) > 256 {
		g.frees = g.frees[len(g.frees)-256:]
	}
	if x.after != nil {
		x.after()
	}
	if !x.c.closed {
		g.idle = append(g.idle, x.c)
	}
}

func indexOf(steps []step, m *message) int {
	for i, s := range steps {
		if s.m == m {
			return i
		}
	}
	return -1
}

// nextExchange picks what to do next: a planted violation whose time has
// come, a scheduled close, a new connection's setup, or a request on an
// idle connection.
func (g *gen) nextExchange() *exchange {
	for _, p := range g.plants {
		if !p.started && g.pw.bytes >= int64(p.at*float64(g.cfg.target)) {
			p.started = true
			return g.plantExchange(p)
		}
	}
	if len(g.closeAt) > 0 && g.pw.bytes >= g.closeAt[0] {
		restart := g.nclosed%2 == 1
		ok := func(c *conn) bool {
			return !c.midstream && c.inst.plant == nil && (!restart || c.inst.live == 1 && c == c.inst.primary)
		}
		if c := g.takeIdle(ok); c != nil {
			g.closeAt = g.closeAt[1:]
			g.nclosed++
			return g.closeExchange(c, restart)
		}
	}
	if len(g.setupQ) > 0 && (len(g.idle) == 0 || g.rng.IntN(16) != 0) {
		c := g.setupQ[0]
		g.setupQ = g.setupQ[1:]
		return &exchange{c: c, steps: g.setup(c)}
	}
	c := g.takeIdle(nil)
	if c == nil {
		return nil
	}
	return &exchange{c: c, steps: g.steady(c)}
}

// takeIdle takes a random idle connection that ok accepts (any when nil);
// group connections come groupWeight times as often as the others, their
// exchanges being small and frequent.
func (g *gen) takeIdle(ok func(*conn) bool) *conn {
	pick := -1
	for try := 0; try < 64 && len(g.idle) > 0; try++ {
		i := g.rng.IntN(len(g.idle))
		c := g.idle[i]
		if ok != nil && !ok(c) {
			continue
		}
		pick = i
		if c.role == roleGroup || c.role == roleGroup848 || ok != nil || g.rng.IntN(g.cfg.groupWeight) == 0 {
			break
		}
	}
	if pick < 0 {
		return nil
	}
	c := g.idle[pick]
	g.idle[pick] = g.idle[len(g.idle)-1]
	g.idle = g.idle[:len(g.idle)-1]
	return c
}

// setup is a new connection's first exchange: the handshake, ApiVersions,
// Metadata, telemetry on the instance's telemetry connection, and joining
// the group on a group connection.
func (g *gen) setup(c *conn) []step {
	c.seq = [2]uint32{g.rng.Uint32(), g.rng.Uint32()}
	steps := []step{{kind: stepSYN}, {kind: stepSYNACK}, {kind: stepACK}}
	if g.tls != nil {
		steps = append(steps, g.tlsHandshake(c)...)
	}
	steps = append(steps, g.apiVersions(c)...)
	steps = append(steps, g.metadata(c, headerID{})...)
	if c == c.inst.primary {
		steps = append(steps, g.telemetry(c)...)
	}
	switch c.role {
	case roleGroup:
		steps = append(steps, g.joinClassic(c)...)
	case roleGroup848:
		in := c.inst
		if in.member == "" {
			in.member = g.memberID()
		}
		epoch := in.generation
		steps = append(steps, g.consumerHeartbeat(c, in.member, epoch, errNone)...)
	}
	return steps
}

// joinClassic joins a classic group as KIP-394 asks: a first JoinGroup
// without a member ID is answered MEMBER_ID_REQUIRED with one, and the
// client joins again with it. A member that has its ID rejoins with it.
func (g *gen) joinClassic(c *conn) []step {
	in := c.inst
	var steps []step
	if in.member == "" {
		in.member = fmt.Sprintf("%s-%s", in.clientID, g.memberID())
		steps = g.joinGroup(c, "", errMemberIDRequired, in.member)
	}
	steps = append(steps, g.joinGroup(c, in.member, errNone, in.member)...)
	return append(steps, g.syncGroup(c)...)
}

// steady is one exchange of an established connection.
func (g *gen) steady(c *conn) []step {
	in := c.inst
	if c == in.primary && (!c.teleReady || g.now-in.lastPush >= pushIntervalMillis*1e6) {
		return g.telemetry(c)
	}
	if g.rng.IntN(100) < 2 {
		return g.metadata(c, headerID{})
	}
	switch c.role {
	case roleProducer:
		return g.produce(c, false)
	case roleFetcher:
		return g.fetch(c, 0)
	case roleGroup:
		if g.rng.IntN(10) < 7 {
			return g.heartbeat(c)
		}
	case roleGroup848:
		if g.rng.IntN(10) < 7 {
			return g.consumerHeartbeat(c, in.member, in.generation, errNone)
		}
	}
	return g.offsetCommit(c)
}

// closeExchange closes c: a reconnect (either side closes, the instance
// opens a new connection to the same broker) or, with restart, the end of
// the client instance (a terminating push, the client closes, and a new
// instance takes its place).
func (g *gen) closeExchange(c *conn, restart bool) *exchange {
	var steps []step
	first := toBroker
	if restart {
		if c.teleReady {
			steps = g.pushTelemetry(c, true)
		}
	} else if g.rng.IntN(2) == 0 {
		first = toClient // the broker closes an idle connection
	}
	if c.tls != nil {
		steps = append(steps, closeNotify(first))
	}
	steps = append(steps, step{kind: stepFIN, dir: first}, step{kind: stepFIN, dir: 1 - first}, step{kind: stepACK, dir: first})
	return &exchange{c: c, steps: steps, after: func() {
		c.closed = true
		in := c.inst
		in.live--
		if restart {
			g.st.restarts++
			n := g.newInstance(in.app, in.newClient)
			g.setupQ = append(g.setupQ, g.newConn(n, c.role, c.srv))
			return
		}
		g.st.reconnects++
		nc := g.newConn(in, c.role, c.srv)
		if in.primary == c {
			in.primary = nc
		}
		g.setupQ = append(g.setupQ, nc)
	}}
}

// ---- TCP ----

// nextPacket returns the next packet of x, making the packets of its next
// step when the ones made are written; nil when x is done.
func (g *gen) nextPacket(x *exchange) *queued {
	for x.qi == len(x.q) {
		if x.next == len(x.steps) {
			return nil
		}
		x.q, x.qi = x.q[:0], 0
		s := &x.steps[x.next]
		x.next++
		c := x.c
		switch s.kind {
		case stepSYN:
			x.q = append(x.q, queued{dir: toBroker, flags: flagSYN, seq: c.seq[toBroker]})
			c.seq[toBroker]++
			g.st.control++
		case stepSYNACK:
			x.q = append(x.q, queued{dir: toClient, flags: flagSYN | flagACK, seq: c.seq[toClient], ack: c.seq[toBroker]})
			c.seq[toClient]++
			g.st.control++
		case stepACK:
			x.q = append(x.q, queued{dir: s.dir, flags: flagACK, seq: c.seq[s.dir], ack: c.seq[1-s.dir]})
			g.st.control++
		case stepFIN:
			x.q = append(x.q, queued{dir: s.dir, flags: flagFIN | flagACK, seq: c.seq[s.dir], ack: c.seq[1-s.dir]})
			c.seq[s.dir]++
			g.st.control++
		case stepData:
			g.sealMessage(c, s.m)
			g.segment(x, s.m)
		}
	}
	q := &x.q[x.qi]
	x.qi++
	return q
}

// segment makes the packets of message m the way Linux sends them: MSS
// segments, the receiver's pure ACK for every second one, a duplicate ACK
// when a segment is overtaken by the next one (and a full ACK once the hole
// is filled), a duplicate ACK after a spurious retransmission. A request's
// last segments are acknowledged by the response; a response's by the
// client's pure ACK.
func (g *gen) segment(x *exchange, m *message) {
	c := x.c
	d, r := m.dir, 1-m.dir
	data := m.data
	if m.wire != nil {
		data = m.wire
	}
	n := (len(data) + mss - 1) / mss
	m.segsLeft = n
	base := c.seq[d]
	ack := c.seq[r]
	seg := func(i int, first bool) queued {
		off := i * mss
		end := min(off+mss, len(data))
		fl := uint8(flagACK)
		if end == len(data) {
			fl |= flagPSH
		}
		return queued{dir: d, flags: fl, seq: base + uint32(off), ack: ack, payload: data[off:end], m: m, first: first}
	}
	pure := func(upTo uint32) queued {
		g.st.pureAcks++
		return queued{dir: r, flags: flagACK, seq: c.seq[r], ack: upTo}
	}
	unacked := 0
	for i := 0; i < n; i++ {
		if !x.quiet && i+1 < n && g.rng.Float64() < g.cfg.ooo {
			s0, s1 := seg(i, true), seg(i+1, true)
			x.q = append(x.q, s1, pure(s0.seq), s0, pure(s1.seq+uint32(len(s1.payload))))
			g.st.ooo++
			g.st.dataSegs += 2
			i++
			unacked = 0
			continue
		}
		s := seg(i, true)
		x.q = append(x.q, s)
		g.st.dataSegs++
		unacked++
		end := s.seq + uint32(len(s.payload))
		switch {
		case !x.quiet && g.rng.Float64() < g.cfg.dup:
			x.q = append(x.q, seg(i, false), pure(end))
			g.st.dups++
			unacked = 0
		case unacked == 2:
			x.q = append(x.q, pure(end))
			unacked = 0
		}
	}
	c.seq[d] = base + uint32(len(data))
	if m.resp && unacked > 0 {
		x.q = append(x.q, pure(c.seq[d]))
	}
}

// emit writes one packet of c at the current capture time and advances the
// clock; a message whose last missing segment this is becomes complete.
func (g *gen) emit(c *conn, q *queued) {
	p := tcpPacket{seq: q.seq, ack: q.ack, flags: q.flags, payload: q.payload, win: c.win[q.dir]}
	if q.dir == toBroker {
		p.src, p.dst, p.sport, p.dport = c.cli, c.srv, c.cport, brokerPort
	} else {
		p.src, p.dst, p.sport, p.dport = c.srv, c.cli, brokerPort, c.cport
	}
	p.tsval, p.tsecr = p.src.tsval(g.now), c.ts[1-q.dir]
	c.ts[q.dir] = p.tsval
	if q.flags&flagSYN != 0 {
		p.win = 64240
		if q.flags&flagACK == 0 {
			p.tsecr = 0
		} else {
			p.win = 65160
		}
	}
	frame, err := g.pw.write(g.now, &p)
	if err != nil {
		g.err = err
		return
	}
	if !c.seen {
		c.seen = true
		g.st.connections++
	}
	if c.firstData == 0 && (len(q.payload) > 0 || q.flags&flagSYN != 0) {
		c.firstData = frame
	}
	g.now += int64(float64(len(q.payload)+66+16)*g.nsPerB*(0.2+1.6*g.rng.Float64())) + 500
	if m := q.m; m != nil && q.first {
		m.segsLeft--
		if m.segsLeft == 0 && !m.partial && !m.hs {
			m.frame = frame
			if m.resp {
				g.st.resps[m.key]++
			} else {
				g.st.reqs[m.key]++
			}
			if m.plant != nil {
				m.plant.record(c, m, frame)
			}
			if g.onMessage != nil {
				g.onMessage(c, m)
			}
		}
	}
}
