package samples

import "github.com/kidscope/kidscope/samples/netsim"

// Header rules (docs/design/rules.md §2, §3): each rule under the seed profile and the
// accepted profile, each beside a clean twin that differs in one detail,
// and the auto profile on a capture that mixes both.
//
// A seed-profile client puts its ID in every flexible (v2) header, from its
// first request (ApiVersions v3) on. An accepted-profile client puts it in
// its first v3-header request (GetTelemetrySubscriptions v1 here, with its
// ClientId) and then sends v3-header requests with neither ID nor ClientId;
// its v2-header requests are not judged.

// pair returns a violating scenario and its clean twin, which share
// everything but what twin changes.
func pair(v Scenario, cleanDesc string, twin func(*Scenario)) []Scenario {
	c := v
	c.Name = v.Name + "-clean"
	c.Description = cleanDesc
	c.Conns = nil
	c.Brokers = nil
	twin(&c)
	return []Scenario{v, c}
}

const (
	group  = "orders-consumers"
	appID  = "orders-app"
	member = "orders-app-5b9f3c1e-8a7d-4e0b-9a61-2f4c7d1e9b30"
)

// accepted is the start of an accepted-profile client: ApiVersions and
// Metadata on header v2 with no ID, then GetTelemetrySubscriptions v1
// carrying id (F, labelled est) and a PushTelemetry v1 with neither ID nor
// ClientId (N: the connection is accepted).
func accepted(id HeaderID) []Step {
	return []Step{
		apiVersions(NoTag),
		metadata(NoTag, "orders"),
		gtsV1(id, errNone).label("est"),
		pushV1(NoTag, false, 1, errNone).nullCID(),
	}
}

func headerScenarios() []Scenario {
	var out []Scenario
	cli := ep("10.0.1.10:51044")

	// ---- seed profile ----

	a, b := uid(101), uid(102)
	changed := func(last Step) []Conn {
		return []Conn{{Client: cli, Broker: broker1, ClientID: appID, Profile: Seed, Steps: []Step{
			apiVersions(Tag(a)).label("est"),
			metadata(Tag(a), "orders"),
			findCoordinator(Tag(a), group),
			last,
		}}}
	}
	out = append(out, pair(Scenario{
		Name:        "hdr-seed-changed",
		Description: "seed profile: a client that sent ID A from ApiVersions on sends B in a GetTelemetrySubscriptions header (and body); the KIP-1313 broker answers INVALID_REQUEST",
		Format:      netsim.PcapNG, Seed: 101,
		Brokers: []Broker{{broker1, Enforces}},
		Conns:   changed(gtsV0Err(Tag(b), b, errInvalidRequest).find("header-id-changed", "est")),
	}, "clean twin of hdr-seed-changed: GetTelemetrySubscriptions carries A like every other header, and is answered NONE",
		func(s *Scenario) {
			s.Brokers = []Broker{{broker1, Unknown}}
			s.Conns = changed(gtsV0(Tag(a), a, a))
		})...)

	c := uid(103)
	dropped := func(rejoin Step) []Conn {
		return []Conn{{Client: ep("10.0.1.11:40312"), Broker: broker2, ClientID: "orders-consumer", Profile: Seed, Steps: []Step{
			apiVersions(Tag(c)).label("est"),
			metadata(Tag(c), "orders"),
			findCoordinator(Tag(c), group),
			joinRequired(Tag(c), 7, group, member),
			rejoin,
			syncGroup(Tag(c), group, member),
		}}}
	}
	out = append(out, pair(Scenario{
		Name:        "hdr-seed-dropped",
		Description: "seed profile: a consumer that sent ID C in every header rejoins its group (JoinGroup v7) without it; the pre-KIP-1313 broker accepts the JoinGroup",
		Format:      netsim.PcapNG, Seed: 103,
		Brokers: []Broker{{broker2, Ignores}},
		Conns:   dropped(joinWith(NoTag, 7, group, member).find("header-id-dropped", "est")),
	}, "clean twin of hdr-seed-dropped: the rejoin carries C",
		func(s *Scenario) {
			s.Brokers = []Broker{{broker2, Unknown}}
			s.Conns = dropped(joinWith(Tag(c), 7, group, member))
		})...)

	d := uid(104)
	late := func(first Step) []Conn {
		return []Conn{{Client: ep("10.0.1.12:38870"), Broker: broker2, ClientID: "orders-producer", Profile: Seed, Steps: []Step{
			first,
			metadata(Tag(d), "orders").find("header-id-late", "est"),
			gtsV0(Tag(d), d, ZERO).find("header-id-late", "est"),
			pushV0(Tag(d), d, false, 1, errNone).find("header-id-late", "est"),
		}}}
	}
	out = append(out, pair(Scenario{
		Name:        "hdr-seed-late",
		Description: "seed profile: ApiVersions v3 (the first flexible-header request) carries no ID, later requests carry D: each later one is late; the pre-KIP-1313 broker answers NONE",
		Format:      netsim.PcapNG, Seed: 104,
		Brokers: []Broker{{broker2, Ignores}},
		Conns:   late(apiVersions(NoTag).label("est")),
	}, "clean twin of hdr-seed-late: ApiVersions carries D too",
		func(s *Scenario) {
			s.Brokers = []Broker{{broker2, Unknown}}
			s.Conns = []Conn{{Client: ep("10.0.1.12:38870"), Broker: broker2, ClientID: "orders-producer", Profile: Seed, Steps: []Step{
				apiVersions(Tag(d)),
				metadata(Tag(d), "orders"),
				gtsV0(Tag(d), d, ZERO),
				pushV0(Tag(d), d, false, 1, errNone),
			}}}
		})...)

	e := uid(105)
	out = append(out, pair(Scenario{
		Name:        "hdr-seed-reserved",
		Description: "seed profile: a client uses the reserved UUID ONE as its ID in every header: each request is header-id-reserved; the pre-KIP-1313 broker answers ApiVersions NONE",
		Format:      netsim.PcapNG, Seed: 105,
		Brokers: []Broker{{broker2, Ignores}},
		Conns: []Conn{{Client: ep("10.0.1.13:55120"), Broker: broker2, ClientID: "stock-app", Profile: Seed, Steps: []Step{
			apiVersions(Tag(ONE)).label("est").find("header-id-reserved"),
			metadata(Tag(ONE), "stock").find("header-id-reserved", "est"),
			findCoordinator(Tag(ONE), "stock-consumers").find("header-id-reserved", "est"),
		}}},
	}, "clean twin of hdr-seed-reserved: the client's ID is E, not ONE",
		func(s *Scenario) {
			s.Brokers = []Broker{{broker2, Unknown}}
			s.Conns = []Conn{{Client: ep("10.0.1.13:55120"), Broker: broker2, ClientID: "stock-app", Profile: Seed, Steps: []Step{
				apiVersions(Tag(e)),
				metadata(Tag(e), "stock"),
				findCoordinator(Tag(e), "stock-consumers"),
			}}}
		})...)

	// ---- accepted profile ----

	f, g := uid(106), uid(107)
	accChanged := func(last Step, end End) []Conn {
		return []Conn{{Client: ep("10.0.1.14:47002"), Broker: broker1, ClientID: appID, Profile: Accepted, End: end,
			Steps: append(accepted(Tag(f)), last)}}
	}
	out = append(out, pair(Scenario{
		Name:        "hdr-acc-changed",
		Description: "accepted profile: after GetTelemetrySubscriptions v1 set ID F, a Metadata request carries tag 0 = G; the KIP-1313 broker closes the connection without answering",
		Format:      netsim.PcapNG, Seed: 106,
		Brokers: []Broker{{broker1, Enforces}},
		Conns: accChanged(metadata(Tag(g), "orders").noAnswer().
			find("header-id-changed", "est").find("stream-unanswered"), BrokerCloses),
	}, "clean twin of hdr-acc-changed: the Metadata request carries no tag 0 (a v2 header, not judged) and is answered",
		func(s *Scenario) {
			s.Brokers = []Broker{{broker1, Unknown}}
			s.Conns = accChanged(metadata(NoTag, "orders"), ClientCloses)
		})...)

	h := uid(108)
	out = append(out, pair(Scenario{
		Name:        "hdr-acc-missing-first",
		Description: "accepted profile: an old client's first v3-header request (GetTelemetrySubscriptions v1) carries no ID, and its PushTelemetry v1 then has nothing to identify it; the broker ignores KIP-1313",
		Format:      netsim.PcapNG, Seed: 108,
		Brokers: []Broker{{broker2, Ignores}},
		Conns: []Conn{{Client: ep("10.0.1.15:60218"), Broker: broker2, ClientID: appID, Profile: Accepted, Steps: []Step{
			apiVersions(NoTag),
			metadata(NoTag, "orders"),
			gtsV1(NoTag, errNone).find("header-id-missing-first"),
			pushV1(NoTag, false, 1, errNone).nullCID().find("telemetry-id-missing"),
		}}},
	}, "clean twin of hdr-acc-missing-first: GetTelemetrySubscriptions v1 carries H",
		func(s *Scenario) {
			s.Brokers = []Broker{{broker2, Unknown}}
			s.Conns = []Conn{{Client: ep("10.0.1.15:60218"), Broker: broker2, ClientID: appID, Profile: Accepted,
				Steps: accepted(Tag(h))}}
		})...)

	j := uid(109)
	accZero := func(last Step) []Conn {
		return []Conn{{Client: ep("10.0.1.16:33490"), Broker: broker1, ClientID: appID, Profile: Accepted,
			Steps: append(accepted(Tag(j)), last)}}
	}
	out = append(out, pair(Scenario{
		Name:        "hdr-acc-reserved-zero",
		Description: "accepted profile: a later PushTelemetry v1 carries an explicit ZERO tag 0; the KIP-1313 broker answers INVALID_REQUEST",
		Format:      netsim.PcapNG, Seed: 109,
		Brokers: []Broker{{broker1, Enforces}},
		Conns: accZero(pushV1(Tag(ZERO), false, 2, errInvalidRequest).nullCID().
			find("header-id-reserved", "est").after(30 * second)),
	}, "clean twin of hdr-acc-reserved-zero: the later PushTelemetry v1 carries no tag 0",
		func(s *Scenario) {
			s.Brokers = []Broker{{broker1, Unknown}}
			s.Conns = accZero(pushV1(NoTag, false, 2, errNone).nullCID().after(30 * second))
		})...)

	k := uid(110)
	accOne := func(id HeaderID, first, push []Find) []Conn {
		st := accepted(id)
		st[2].Reqs[0].Finds = first
		st[3].Reqs[0].Finds = push
		if push != nil {
			st[3].Resps[0].Body = pushV1(NoTag, false, 1, errInvalidRequest).Resps[0].Body
		}
		return []Conn{{Client: ep("10.0.1.17:52866"), Broker: broker2, ClientID: appID, Profile: Accepted, Steps: st}}
	}
	out = append(out, pair(Scenario{
		Name:        "hdr-acc-reserved-one",
		Description: "accepted profile: GetTelemetrySubscriptions v1 sets the reserved ID ONE (answered NONE by a broker that ignores KIP-1313); the PushTelemetry v1 that relies on it is rejected",
		Format:      netsim.PcapNG, Seed: 110,
		Brokers: []Broker{{broker2, Ignores}},
		Conns: accOne(Tag(ONE), []Find{{Rule: "header-id-reserved"}},
			[]Find{{Rule: "telemetry-push-reserved-id"}}),
	}, "clean twin of hdr-acc-reserved-one: the ID is K, not ONE",
		func(s *Scenario) {
			s.Brokers = []Broker{{broker2, Unknown}}
			s.Conns = accOne(Tag(k), nil, nil)
		})...)

	l := uid(111)
	accLater := func(last Step) []Conn {
		return []Conn{{Client: ep("10.0.1.18:41778"), Broker: broker1, ClientID: appID, Profile: Accepted,
			Steps: append(accepted(Tag(l)), last)}}
	}
	out = append(out, pair(Scenario{
		Name:        "hdr-acc-client-id-repeated",
		Description: "accepted profile: a later v3-header request (PushTelemetry v1) sends its ClientId again instead of null (a warning: the KIP text is not settled)",
		Format:      netsim.PcapNG, Seed: 111,
		Brokers: []Broker{{broker1, Unknown}},
		Conns:   accLater(pushV1(NoTag, false, 2, errNone).find("header-client-id-repeated", "est").after(30 * second)),
	}, "clean twin of hdr-acc-client-id-repeated: the later PushTelemetry v1 sends a null ClientId",
		func(s *Scenario) {
			s.Brokers = []Broker{{broker1, Unknown}}
			s.Conns = accLater(pushV1(NoTag, false, 2, errNone).nullCID().after(30 * second))
		})...)

	m := uid(112)
	accRepeat := func(last Step) []Conn {
		return []Conn{{Client: ep("10.0.1.19:36204"), Broker: broker1, ClientID: appID, Profile: Accepted,
			Steps: append(accepted(Tag(m)), last)}}
	}
	out = append(out, pair(Scenario{
		Name:        "hdr-acc-id-repeated",
		Description: "accepted profile: a later v3-header request (PushTelemetry v1) repeats the connection's ID M (info: whether that is allowed is unsettled)",
		Format:      netsim.PcapNG, Seed: 112,
		Brokers: []Broker{{broker1, Unknown}},
		Conns:   accRepeat(pushV1(Tag(m), false, 2, errNone).nullCID().find("header-id-repeated", "est").after(30 * second)),
	}, "clean twin of hdr-acc-id-repeated: the later PushTelemetry v1 carries no tag 0",
		func(s *Scenario) {
			s.Brokers = []Broker{{broker1, Unknown}}
			s.Conns = accRepeat(pushV1(NoTag, false, 2, errNone).nullCID().after(30 * second))
		})...)

	out = append(out, autoMix())
	return out
}

// autoMix has six clients of one broker, interleaved, each judged by the
// profile its own traffic follows.
func autoMix() Scenario {
	n, p, q := uid(121), uid(122), uid(123)
	conns := []Conn{
		{Client: ep("10.0.1.20:50110"), Broker: broker2, ClientID: "orders-app", Profile: Seed, Steps: []Step{
			apiVersions(Tag(n)),
			metadata(Tag(n), "orders"),
			findCoordinator(Tag(n), group),
			offsetDelete(group, "orders"), // header v1: exempt, cannot carry the ID
		}},
		{Client: ep("10.0.1.21:44782"), Broker: broker2, ClientID: "billing-app", Profile: Accepted, Steps: accepted(Tag(p))},
		{Client: ep("10.0.1.22:39918"), Broker: broker2, ClientID: "legacy-app", Profile: NoProfile, Steps: []Step{
			apiVersions(NoTag),
			metadata(NoTag, "orders"),
			fetch("orders", 1200, 3),
		}},
		{Client: ep("10.0.1.23:58340"), Broker: broker2, ClientID: "audit-app", Profile: Seed, Steps: []Step{
			apiVersions(Tag(q)).label("c3.est"),
			metadata(NoTag, "audit").find("header-id-dropped", "c3.est"),
			produce("audit", 88, 2),
		}},
		{Client: ep("10.0.1.24:46650"), Broker: broker2, ClientID: "probe-app", Profile: NoProfile, Steps: []Step{
			apiVersions(Tag(ONE)).find("header-id-reserved"),
			produce("probes", 7, 1),
		}},
		{Client: ep("10.0.1.25:37124"), Broker: broker2, ClientID: "reports-app", Profile: Accepted, Steps: []Step{
			apiVersions(NoTag),
			metadata(NoTag, "reports"),
			gtsV1(Tag(ZERO), errNone).find("header-id-reserved"),
		}},
	}
	return Scenario{
		Name: "profile-auto-mix",
		Description: "--profile auto on six interleaved clients of one broker: seed (IDs in every flexible header; OffsetDelete v0 has none), accepted (ID on the first v3 header, then none and a null ClientId), " +
			"old (no ID), seed told by its own violation (no ID and a ClientId on the request after the first ID), undetermined (ONE, then no flexible request), " +
			"and an old client whose first v3-mapped request carries an explicit ZERO",
		Format:   netsim.PcapNG,
		Seed:     120,
		Brokers:  []Broker{{broker2, Ignores}},
		Conns:    conns,
		Schedule: roundRobin(conns),
	}
}
