package samples

import "github.com/kidscope/kidscope/samples/netsim"

// Telemetry rules (docs/design/rules.md §4) and the broker classification (§5) that
// needs more than one answer.

// telemetryClient is an old client (no header IDs) that gets telemetry ID x
// from broker1 and then runs pushes.
func telemetryClient(cli string, x [16]byte, pushes ...Step) []Conn {
	steps := []Step{
		apiVersions(NoTag),
		metadata(NoTag, "orders"),
		gtsV0(NoTag, ZERO, x),
	}
	return []Conn{{Client: ep(cli), Broker: broker1, ClientID: "orders-producer", Steps: append(steps, pushes...)}}
}

// reissueClients are three old clients of broker3, one after the other,
// each asking for a new telemetry ID (R = ZERO, no H) and getting ids[i]:
// the first pushes and then pushes with Terminating = true as it closes;
// the others push after it. The first answer is labelled "assigned";
// reissued is the rule expected at the later answers, if any.
func reissueClients(ids [3][16]byte, reissued string) []Conn {
	hosts := []struct{ client, clientID, topic string }{
		{"10.0.1.54:40112", "orders-producer", "orders"},
		{"10.0.1.55:52780", "billing-producer", "billing"},
		{"10.0.1.56:35514", "audit-consumer", "audit"},
	}
	var conns []Conn
	for i, h := range hosts {
		gts := gtsV0(NoTag, ZERO, ids[i])
		switch {
		case i == 0:
			gts = gts.respLabel("assigned")
		case reissued != "":
			gts = gts.respFind(reissued, "assigned")
		}
		steps := []Step{apiVersions(NoTag), metadata(NoTag, h.topic), gts,
			pushV0(NoTag, ids[i], false, 1, errNone).after(30 * second)}
		if i == 0 {
			steps = append(steps, pushV0(NoTag, ids[i], true, 2, errNone).after(4*second))
		}
		conns = append(conns, Conn{Client: ep(h.client), Broker: broker3, ClientID: h.clientID, Steps: steps})
	}
	return conns
}

func telemetryScenarios() []Scenario {
	x, y := uid(301), uid(302)
	tx := uid(303)
	ku, xu := uid(304), uid(305)
	a, b := uid(306), uid(307)
	kc, mc := uid(308), uid(309)
	s := uid(310)
	t, kt := uid(311), uid(312)
	u, v, xm := uid(313), uid(314), uid(315)
	r1, r2, r3 := uid(316), uid(317), uid(318)
	te, jv, jw := uid(319), uid(320), uid(321)

	return []Scenario{
		{
			Name:        "tel-assigned-reused",
			Description: "KIP-714 as it should be: an old client gets telemetry ID X from GetTelemetrySubscriptions (R = ZERO) and pushes with X every 30 s; nothing to find",
			Format:      netsim.PcapNG, Seed: 301,
			Brokers: []Broker{{broker1, Unknown}},
			Conns: telemetryClient("10.0.1.40:51502", x,
				pushV0(NoTag, x, false, 1, errNone).after(30*second),
				pushV0(NoTag, x, false, 2, errNone).after(30*second)),
		},
		{
			Name:        "tel-assigned-not-reused",
			Description: "the client got telemetry ID X but its second push carries Y; the broker answers UNKNOWN_SUBSCRIPTION_ID",
			Format:      netsim.PcapNG, Seed: 302,
			Brokers: []Broker{{broker1, Unknown}},
			Conns: telemetryClient("10.0.1.40:51502", x,
				pushV0(NoTag, x, false, 1, errNone).after(30*second),
				pushV0(NoTag, y, false, 2, errUnknownSubscriptionID).after(30*second).find("telemetry-id-not-reused")),
		},
		{
			Name:        "tel-push-zero",
			Description: "the client got telemetry ID X but pushes with ZERO; the broker answers INVALID_REQUEST",
			Format:      netsim.PcapNG, Seed: 303,
			Brokers: []Broker{{broker1, Unknown}},
			Conns: telemetryClient("10.0.1.41:42290", tx,
				pushV0(NoTag, ZERO, false, 1, errInvalidRequest).after(30*second).find("telemetry-push-reserved-id")),
		},
		{
			Name:        "tel-push-after-terminating",
			Description: "the client pushes with Terminating = true and then pushes again for the same ID; the broker answers INVALID_REQUEST",
			Format:      netsim.PcapNG, Seed: 304,
			Brokers: []Broker{{broker1, Unknown}},
			Conns: telemetryClient("10.0.1.42:60870", tx,
				pushV0(NoTag, tx, false, 1, errNone).after(30*second),
				pushV0(NoTag, tx, true, 2, errNone).after(4*second),
				pushV0(NoTag, tx, false, 3, errInvalidRequest).after(second).find("telemetry-push-after-terminating")),
		},
		{
			Name: "tel-push-unknown-id",
			Description: "a client pushes with an ID no GetTelemetrySubscriptions in the capture gave it (a warning: the capture may have started late); " +
				"another client's push to broker2 uses the ID broker1 assigned it, which is known",
			Format: netsim.PcapNG, Seed: 305,
			Brokers: []Broker{{broker1, Unknown}, {broker2, Unknown}},
			Conns: []Conn{
				{Client: ep("10.0.1.43:38016"), Broker: broker1, ClientID: "orders-producer", Steps: []Step{
					apiVersions(NoTag),
					metadata(NoTag, "orders"),
					pushV0(NoTag, ku, false, 7, errNone).find("telemetry-push-unknown-id"),
				}},
				{Client: ep("10.0.1.44:45538"), Broker: broker1, ClientID: "billing-producer", Steps: []Step{
					apiVersions(NoTag),
					metadata(NoTag, "billing"),
					gtsV0(NoTag, ZERO, xu),
				}},
				{Client: ep("10.0.1.44:45540"), Broker: broker2, ClientID: "billing-producer", Steps: []Step{
					apiVersions(NoTag),
					pushV0(NoTag, xu, false, 1, errNone),
				}},
			},
		},
		{
			Name: "tel-push-after-terminating-echoed",
			Description: "after its terminating push the client asks again naming its ID (answered NONE, the ID echoed, as Apache Kafka answers) and pushes: " +
				"broker1 still rejects the push (INVALID_REQUEST), a push after terminating rather than a valid request rejected; " +
				"then it pushes for the ID to broker2, which accepts it (Apache keeps the terminating state per broker): still a push after terminating",
			Format: netsim.PcapNG, Seed: 319,
			Brokers: []Broker{{broker1, Unknown}, {broker2, Unknown}},
			Conns: append(telemetryClient("10.0.1.48:41210", te,
				pushV0(NoTag, te, false, 1, errNone).after(30*second),
				pushV0(NoTag, te, true, 2, errNone).after(4*second),
				gtsV0(NoTag, te, te).after(second),
				pushV0(NoTag, te, false, 3, errInvalidRequest).after(second).find("telemetry-push-after-terminating")),
				Conn{Client: ep("10.0.1.48:41226"), Broker: broker2, ClientID: "orders-producer", Steps: []Step{
					apiVersions(NoTag).after(second),
					pushV0(NoTag, te, false, 4, errNone).find("telemetry-push-after-terminating"),
				}}),
		},
		{
			Name: "tel-push-unknown-id-live",
			Description: "a capture on a broker host that started after its clients: a Java-like client, which asks once and then only pushes, " +
				"pushes three times on a connection open before the capture (one finding for the ID, info) and then to broker2 on a new connection (counted in it); " +
				"another client's exchange with broker1 makes its ID known to broker2",
			Format: netsim.PcapNG, Seed: 320,
			Brokers: []Broker{{broker1, Unknown}, {broker2, Unknown}},
			Conns: []Conn{
				{Client: ep("10.0.1.49:50110"), Broker: broker1, ClientID: "orders-producer", MidStream: true, FirstCorr: 230,
					Finds: []Find{{Rule: "stream-mid-start"}},
					Steps: []Step{
						pushV0(NoTag, jv, false, 1, errNone).findInfo("telemetry-push-unknown-id"),
						pushV0(NoTag, jv, false, 2, errNone).after(30 * second),
						pushV0(NoTag, jv, false, 3, errNone).after(30 * second),
					}},
				{Client: ep("10.0.1.49:50142"), Broker: broker2, ClientID: "orders-producer", Steps: []Step{
					apiVersions(NoTag).after(5 * second),
					metadata(NoTag, "orders"),
					pushV0(NoTag, jv, false, 4, errNone).after(25 * second),
				}},
				{Client: ep("10.0.1.50:37702"), Broker: broker1, ClientID: "billing-producer", Steps: []Step{
					apiVersions(NoTag),
					metadata(NoTag, "billing"),
					gtsV0(NoTag, ZERO, jw),
				}},
				{Client: ep("10.0.1.50:37730"), Broker: broker2, ClientID: "billing-producer", Steps: []Step{
					apiVersions(NoTag),
					pushV0(NoTag, jw, false, 1, errNone),
				}},
			},
		},
		{
			Name: "tel-v1-header-id",
			Description: "telemetry v1 (no body ID): with an ID in the header (accepted client), with the connection's ID only (its later push), " +
				"under the seed profile (ID in every header), and on a connection that has no ID at all (seen mid-stream, so only telemetry-id-missing fires)",
			Format: netsim.PcapNG, Seed: 306,
			Brokers: []Broker{{broker1, Unknown}},
			Conns: []Conn{
				{Client: ep("10.0.1.45:57302"), Broker: broker1, ClientID: "orders-app", Profile: Accepted, Steps: accepted(Tag(a))},
				{Client: ep("10.0.1.46:49774"), Broker: broker1, ClientID: "billing-app", Profile: Seed, Steps: []Step{
					apiVersions(Tag(b)),
					metadata(Tag(b), "billing"),
					gtsV1(Tag(b), errNone),
					pushV1(Tag(b), false, 1, errNone),
				}},
				{Client: ep("10.0.1.47:40028"), Broker: broker1, ClientID: "legacy-app", Profile: Accepted, MidStream: true, FirstCorr: 41,
					Finds: []Find{{Rule: "stream-mid-start"}},
					Steps: []Step{
						together(metadata(NoTag, "legacy").tail(23), gtsV1(NoTag, errNone).find("telemetry-id-missing")),
						pushV1(NoTag, false, 1, errNone).find("telemetry-id-missing"),
					}},
			},
		},
		{
			Name:        "tel-broker-no-id",
			Description: "a broker that fails to assign: GetTelemetrySubscriptions with R = ZERO and no H is answered NONE with B = ZERO",
			Format:      netsim.PcapNG, Seed: 307,
			Brokers: []Broker{{broker3, Unknown}},
			Conns: []Conn{{Client: ep("10.0.1.48:33912"), Broker: broker3, ClientID: "orders-producer", Steps: []Step{
				apiVersions(NoTag),
				metadata(NoTag, "orders"),
				gtsV0(NoTag, ZERO, ZERO).respFind("broker-id-not-assigned"),
			}}},
		},
		{
			Name:        "tel-broker-id-conflict",
			Description: "GetTelemetrySubscriptions with R = K is answered NONE with a different non-zero B (Apache brokers echo R)",
			Format:      netsim.PcapNG, Seed: 308,
			Brokers: []Broker{{broker3, Unknown}},
			Conns: []Conn{{Client: ep("10.0.1.49:59646"), Broker: broker3, ClientID: "orders-producer", Steps: []Step{
				apiVersions(NoTag),
				metadata(NoTag, "orders"),
				gtsV0(NoTag, kc, mc).respFind("broker-id-conflict"),
			}}},
		},
		{
			Name:        "tel-broker-rejects-valid",
			Description: "a broker answers INVALID_REQUEST to a GetTelemetrySubscriptions that breaks no rule (H = R = S on a seed connection)",
			Format:      netsim.PcapNG, Seed: 309,
			Brokers: []Broker{{broker3, Unknown}},
			Conns: []Conn{{Client: ep("10.0.1.50:52014"), Broker: broker3, ClientID: "orders-app", Profile: Seed, Steps: []Step{
				apiVersions(Tag(s)),
				metadata(Tag(s), "orders"),
				gtsV0Err(Tag(s), s, errInvalidRequest).respFind("broker-rejected-valid"),
			}}},
		},
		{
			Name: "tel-broker-reissues-id",
			Description: "a broker that gives every client the same telemetry ID (as librdkafka's mock cluster does): three clients, one after the other, " +
				"ask for a new ID (R = ZERO, no H) and get the same B; the first pushes with Terminating = true as it closes, the others push with B after it " +
				"(the broker re-issued B: a warning at each later answer, no push after terminating)",
			Format: netsim.PcapNG, Seed: 312,
			Brokers: []Broker{{broker3, Unknown}},
			Conns:   reissueClients([3][16]byte{r1, r1, r1}, "broker-id-reissued"),
		},
		{
			Name:        "tel-broker-reissues-id-clean",
			Description: "the same three clients, each given its own telemetry ID; the first pushes with Terminating = true as it closes, the others push after it",
			Format:      netsim.PcapNG, Seed: 313,
			Brokers: []Broker{{broker3, Unknown}},
			Conns:   reissueClients([3][16]byte{r1, r2, r3}, ""),
		},
		{
			Name:        "tel-push-body-mismatch",
			Description: "a seed client with H = T pushes (PushTelemetry v0) with body ID K ≠ T; the KIP-1313 broker answers INVALID_REQUEST",
			Format:      netsim.PcapNG, Seed: 310,
			Brokers: []Broker{{broker1, Enforces}},
			Conns: []Conn{{Client: ep("10.0.1.51:36748"), Broker: broker1, ClientID: "orders-app", Profile: Seed, Steps: []Step{
				apiVersions(Tag(t)),
				metadata(Tag(t), "orders"),
				gtsV0(Tag(t), t, t),
				pushV0(Tag(t), kt, false, 1, errInvalidRequest).after(30 * second).find("telemetry-body-mismatch"),
			}}},
		},
		{
			Name: "broker-mixed",
			Description: "broker1 is upgraded during the capture: before, it assigns an ID to a mismatched GetTelemetrySubscriptions (ignores KIP-1313); " +
				"after its restart it rejects the same mistake with INVALID_REQUEST (enforces): mixed",
			Format: netsim.PcapNG, Seed: 311,
			Brokers: []Broker{{broker1, Mixed}},
			Conns: []Conn{
				{Client: ep("10.0.1.52:48120"), Broker: broker1, ClientID: "orders-app", Profile: Seed, End: BrokerCloses, Steps: []Step{
					apiVersions(Tag(u)),
					metadata(Tag(u), "orders"),
					gtsV0(Tag(u), ZERO, xm).find("telemetry-body-mismatch"),
				}},
				{Client: ep("10.0.1.53:41936"), Broker: broker1, ClientID: "billing-app", Profile: Seed, Steps: []Step{
					apiVersions(Tag(v)).after(45 * second),
					metadata(Tag(v), "billing"),
					gtsV0Err(Tag(v), ZERO, errInvalidRequest).find("telemetry-body-mismatch"),
				}},
			},
		},
	}
}
