package samples

import (
	"strconv"

	"github.com/kidscope/kidscope/samples/netsim"
)

// Across connections (docs/design/rules.md §7), what the capture cannot show (§8),
// TCP that bends messages, other link layers and ports, TLS and SASL.

func instanceScenarios() []Scenario {
	y := uid(501)
	z1, z2 := uid(502), uid(503)
	seedConn := func(cli string, id [16]byte, clientID string, first Step) Conn {
		return Conn{Client: ep(cli), Broker: broker1, ClientID: clientID, Profile: Seed, Steps: []Step{
			first,
			metadata(Tag(id), "orders"),
			findCoordinator(Tag(id), group),
		}}
	}
	split := func(overlap bool, desc, name string, find []Find) Scenario {
		producer := Conn{Client: ep("10.0.2.10:50122"), Broker: broker1, ClientID: "orders-app", Profile: Seed, Steps: []Step{
			apiVersions(Tag(z1)),
			metadata(Tag(z1), "orders"),
			initProducerID(Tag(z1)),
			produce("orders", 5000, 3),
		}}
		first := apiVersions(Tag(z2))
		first.Reqs[0].Finds = find
		consumer := Conn{Client: ep("10.0.2.10:50138"), Broker: broker1, ClientID: "orders-app", Profile: Seed, Steps: []Step{
			first,
			metadata(Tag(z2), "orders"),
			findCoordinator(Tag(z2), group),
			offsetFetch(Tag(z2), group, "orders"),
		}}
		conns := []Conn{producer, consumer}
		s := Scenario{Name: name, Description: desc, Format: netsim.PcapNG, Seed: 502,
			Brokers: []Broker{{broker1, Unknown}}, Conns: conns}
		if overlap {
			// The producer opens and sends ApiVersions, then the consumer
			// does, then both run in turns (open, 4 steps, end each).
			s.Schedule = []int{0, 0, 1, 1, 0, 1, 0, 1, 0, 1, 0, 1}
		}
		return s
	}
	return []Scenario{
		{
			Name: "inst-shared",
			Description: "one client instance ID (Y) is used from three client addresses (a container image with a baked-in ID): instance-id-shared once, " +
				"on the first connection from the second address",
			Format: netsim.PcapNG, Seed: 501,
			Brokers: []Broker{{broker1, Unknown}},
			Conns: []Conn{
				seedConn("10.0.2.1:41002", y, "orders-app", apiVersions(Tag(y)).label("first")),
				seedConn("10.0.2.1:41010", y, "orders-app", apiVersions(Tag(y))),
				seedConn("10.0.2.2:57730", y, "orders-app", apiVersions(Tag(y)).find("instance-id-shared", "first")),
				seedConn("10.0.2.3:33514", y, "orders-app", apiVersions(Tag(y))),
			},
		},
		split(true, "one client (same address and ClientId: a producer and a consumer in one process) has two overlapping connections with different instance IDs Z1 and Z2",
			"inst-split", []Find{{Rule: "instance-id-split"}}),
		split(false, "clean twin of inst-split: the producer's connection closes before the consumer's opens (a restart with a new ID), so they do not overlap",
			"inst-split-clean", nil),
	}
}

// uuidAt is the offset of the tag 0 UUID in a request frame whose header
// carries clientID: size, key, version, correlation ID, ClientId, the tag
// count, tag and size bytes.
func uuidAt(clientID string) int { return 4 + 8 + 2 + len(clientID) + 3 }

// topics are n topic names, for requests that fill several segments.
func topics(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = "orders-eu-west-" + strconv.Itoa(i%3+1) + "-shard-" + strconv.Itoa(100+i)
	}
	return out
}

func streamScenarios() []Scenario {
	aa, ab, ac := uid(601), uid(602), uid(603)
	ad, ae := uid(604), uid(605)
	af := uid(606)
	ag, ah := uid(607), uid(608)
	return []Scenario{
		{
			Name: "stream-mid-start",
			Description: "two connections began before the capture, which starts inside a request: header-id-changed still fires (the ID first seen is the established one), " +
				"header-id-late does not (no true first request)",
			Format: netsim.PcapNG, Seed: 601,
			Brokers: []Broker{{broker1, Enforces}},
			Conns: []Conn{
				{Client: ep("10.0.3.1:52210"), Broker: broker1, ClientID: "orders-consumer", MidStream: true, FirstCorr: 57, Profile: Seed,
					Finds: []Find{{Rule: "stream-mid-start"}},
					Steps: []Step{
						together(metadata(Tag(aa), "orders").tail(30), findCoordinator(Tag(aa), group).label("c0.est")),
						joinRequired(Tag(aa), 7, group, member),
						joinRejected(Tag(ab), 7, group, member, errInvalidRequest).find("header-id-changed", "c0.est"),
					}},
				{Client: ep("10.0.3.2:40716"), Broker: broker1, ClientID: "billing-consumer", MidStream: true, FirstCorr: 12, Profile: Seed,
					Finds: []Find{{Rule: "stream-mid-start"}},
					Steps: []Step{
						together(offsetFetch(NoTag, "billing-consumers", "billing").tail(17), metadata(NoTag, "billing")),
						findCoordinator(Tag(ac), "billing-consumers"),
						offsetFetch(Tag(ac), "billing-consumers", "billing"),
					}},
			},
		},
		{
			Name: "stream-awkward-segments",
			Description: "messages cut at awkward offsets (inside the size field, the header, the ClientId, the tag 0 UUID) and several requests in one segment; " +
				"the last request carries a changed ID and the KIP-1313 broker answers INVALID_REQUEST",
			Format: netsim.PcapNG, Seed: 602,
			Brokers: []Broker{{broker1, Enforces}},
			Conns: []Conn{{Client: ep("10.0.3.3:45092"), Broker: broker1, ClientID: "orders-app", Profile: Seed, Steps: []Step{
				apiVersions(Tag(ad)).label("est").seg(netsim.SplitAt(1)).respSeg(netsim.SplitAt(2, 5)),
				metadata(Tag(ad), "orders", "payments").seg(netsim.SplitAt(4, 6, 12, 16, uuidAt("orders-app")+1)),
				together(findCoordinator(Tag(ad), group), offsetFetch(Tag(ad), group, "orders")),
				together(initProducerID(Tag(ad)), produce("orders", 900, 30)),
				gtsV0Err(Tag(ae), ae, errInvalidRequest).seg(netsim.SplitAt(1, 5, 20, uuidAt("orders-app")+7)).respSeg(netsim.SplitAt(3)).
					find("header-id-changed", "est"),
			}}},
		},
		{
			Name: "stream-reorder-retransmit",
			Description: "segments out of order, retransmitted, overlapping, and lost then retransmitted; the last request drops the connection's ID, " +
				"which the pre-KIP-1313 broker accepts",
			Format: netsim.PcapNG, Seed: 603,
			Brokers: []Broker{{broker2, Ignores}},
			Conns: []Conn{{Client: ep("10.0.3.4:38862"), Broker: broker2, ClientID: "orders-app", Profile: Seed, Steps: []Step{
				apiVersions(Tag(af)).label("est").respSeg(netsim.SplitAt(100), netsim.Reorder(0, 1)),
				metadata(Tag(af), "orders").seg(netsim.SplitAt(10, 30), netsim.Reorder(1, 2)),
				produce("orders", 300, 70).seg(netsim.Retransmit(0), netsim.Overlap(2, 100)),
				gtsV0(NoTag, af, ZERO).seg(netsim.SplitAt(8, 20), netsim.Reorder(0, 2), netsim.Retransmit(1)).
					respSeg(netsim.Lose(0), netsim.Retransmit(0)).
					find("header-id-dropped", "est"),
			}}},
		},
		{
			Name: "stream-lost-segment",
			Description: "a segment of a Metadata request is lost (never captured): framing is regained at the next request, " +
				"which carries a changed ID; the KIP-1313 broker answers INVALID_REQUEST",
			Format: netsim.PcapNG, Seed: 604,
			Brokers: []Broker{{broker1, Enforces}},
			Conns: []Conn{{Client: ep("10.0.3.5:55306"), Broker: broker1, ClientID: "orders-app", Profile: Seed, Steps: []Step{
				apiVersions(Tag(ag)).label("est"),
				metadata(Tag(ag), topics(60)...).seg(netsim.SplitAt(600, 1200), netsim.Lose(1)),
				gtsV0Err(Tag(ah), ah, errInvalidRequest).find("header-id-changed", "est").find("stream-gap"),
			}}},
		},
	}
}

func networkScenarios() []Scenario {
	ai, aj, ak, al := uid(701), uid(702), uid(703), uid(704)
	am, an, ao := uid(705), uid(706), uid(707)
	v6broker := ep("[fd00:10::3]:9092")
	portBroker := ep("10.0.0.2:29092")
	tlsBroker := ep("10.0.0.2:9092")
	hello := clientHello("broker-1.kafka.internal", 710)
	return []Scenario{
		{
			Name:        "net-ipv6",
			Description: "IPv6: a seed client drops its ID on GetTelemetrySubscriptions; the pre-KIP-1313 broker answers NONE",
			Format:      netsim.PcapNG, Seed: 701,
			Brokers: []Broker{{v6broker, Ignores}},
			Conns: []Conn{{Client: ep("[fd00:10::21]:50514"), Broker: v6broker, ClientID: "orders-app", Profile: Seed, Steps: []Step{
				apiVersions(Tag(ai)).label("est"),
				metadata(Tag(ai), "orders"),
				gtsV0(NoTag, ai, ZERO).find("header-id-dropped", "est"),
			}}},
		},
		{
			Name:        "net-vlan",
			Description: "802.1Q VLAN 100, pcap format: a seed client changes its ID on JoinGroup; the KIP-1313 broker answers INVALID_REQUEST",
			Format:      netsim.Pcap, Link: netsim.EthernetVLAN, Seed: 702,
			Brokers: []Broker{{broker1, Enforces}},
			Conns: []Conn{{Client: ep("10.0.3.30:36124"), Broker: broker1, ClientID: "orders-consumer", Profile: Seed, Steps: append(
				[]Step{apiVersions(Tag(aj)).label("est"), metadata(Tag(aj), "orders"), findCoordinator(Tag(aj), group)},
				joinRejected(Tag(ak), 7, group, "", errInvalidRequest).find("header-id-changed", "est"),
			)}},
		},
		{
			Name:        "net-sll2",
			Description: "Linux cooked capture v2 (tcpdump -i any): an old client's GetTelemetrySubscriptions v1 carries no ID; the KIP-1313 broker answers INVALID_REQUEST",
			Format:      netsim.PcapNG, Link: netsim.LinuxSLL2, Seed: 703,
			Brokers: []Broker{{broker1, Enforces}},
			Conns: []Conn{{Client: ep("10.0.3.31:48066"), Broker: broker1, ClientID: "orders-app", Profile: Accepted, Steps: []Step{
				apiVersions(NoTag),
				metadata(NoTag, "orders"),
				gtsV1(NoTag, errInvalidRequest).find("header-id-missing-first"),
			}}},
		},
		{
			Name:        "net-port-29092",
			Description: "a broker on port 29092 (kidscope -p 29092): a seed client whose ApiVersions carried no ID sends one later; the pre-KIP-1313 broker answers NONE",
			Format:      netsim.PcapNG, Seed: 704, Ports: []uint16{29092},
			Brokers: []Broker{{portBroker, Ignores}},
			Conns: []Conn{{Client: ep("10.0.3.32:60412"), Broker: portBroker, ClientID: "orders-producer", Profile: Seed, Steps: []Step{
				apiVersions(NoTag).label("est"),
				metadata(Tag(al), "orders").find("header-id-late", "est"),
				gtsV0(Tag(al), al, ZERO).find("header-id-late", "est"),
			}}},
		},
		{
			Name:        "tls-on-kafka-port",
			Description: "TLS on port 9092 (a cluster with an SSL listener there): the connection is named TLS, not decoded; a plaintext client of another broker is clean",
			Format:      netsim.PcapNG, Seed: 705,
			Brokers: []Broker{{tlsBroker, Unknown}, {broker2, Unknown}},
			Conns: []Conn{
				{Client: ep("10.0.3.10:51822"), Broker: tlsBroker, ClientID: "orders-app", Steps: []Step{
					raw(true, "TLS", hello, "stream-not-kafka"),
					raw(false, "TLS", serverFlight(hello, 711)),
					raw(true, "TLS", clientFinished(712)),
					raw(true, "TLS", appData(87, 713)),
					raw(false, "TLS", appData(561, 714)),
					raw(true, "TLS", appData(96, 715)),
					raw(false, "TLS", appData(1402, 716)),
				}},
				{Client: ep("10.0.3.11:43300"), Broker: broker2, ClientID: "billing-app", Profile: Seed, Steps: []Step{
					apiVersions(Tag(ao)),
					metadata(Tag(ao), "billing"),
				}},
			},
		},
		{
			Name: "sasl-v0-tokens",
			Description: "SaslHandshake v0, then a raw SASL/PLAIN token exchange with no Kafka header: the tokens are not requests; after them the client drops its ID " +
				"(the KIP-1313 broker answers INVALID_REQUEST). Beside it, SaslHandshake v1 with SaslAuthenticate v2, clean",
			Format: netsim.PcapNG, Seed: 706,
			Brokers: []Broker{{broker1, Enforces}},
			Conns: []Conn{
				{Client: ep("10.0.3.20:47710"), Broker: broker1, ClientID: "orders-app", Profile: Seed, Steps: []Step{
					apiVersions(Tag(am)).label("est"),
					saslHandshake(0, "PLAIN"),
					raw(true, "SASL token", sizePrefixed(plainToken("orders-app"))),
					raw(false, "SASL token", sizePrefixed(nil)),
					metadata(Tag(am), "orders"),
					findCoordinator(Tag(am), group),
					gtsV0Err(NoTag, am, errInvalidRequest).find("header-id-dropped", "est"),
				}},
				{Client: ep("10.0.3.21:39240"), Broker: broker1, ClientID: "billing-app", Profile: Seed, Steps: []Step{
					apiVersions(Tag(an)),
					saslHandshake(1, "PLAIN"),
					saslAuthenticate(Tag(an), plainToken("billing-app")),
					metadata(Tag(an), "billing"),
				}},
			},
		},
	}
}
