package samples

import "github.com/kidscope/kidscope/samples/netsim"

// The seed's GetTelemetrySubscriptions v0 table (docs/design/rules.md §4), one scenario
// per row. In each, client P talks to broker1, which knows KIP-1313, and
// client Q to broker2, which does not and answers as if the header ID were
// absent. H = header ID, R = body ID, B = the ID the broker returns.

// rowClients returns P's and Q's connections with the same script around
// the row's GetTelemetrySubscriptions: p and q are the row's exchange with
// each broker, then come after it.
func rowClients(hp, hq HeaderID, prof Profile, p, q []Step) []Conn {
	conn := func(cli string, broker, clientID string, h HeaderID, last []Step) Conn {
		steps := []Step{apiVersions(h), metadata(h, "orders")}
		return Conn{Client: ep(cli), Broker: ep(broker), ClientID: clientID, Profile: prof, Steps: append(steps, last...)}
	}
	return []Conn{
		conn("10.0.1.30:49822", "10.0.0.2:9092", "orders-app", hp, p),
		conn("10.0.1.31:53716", "10.0.0.3:9092", "billing-app", hq, q),
	}
}

func tableScenarios() []Scenario {
	x1, x2, x3 := uid(201), uid(202), uid(203)
	k1, k2 := uid(204), uid(205)
	h1, h2 := uid(206), uid(207)
	h3, h4, x4 := uid(208), uid(209), uid(210)
	h5, h6, r5, r6 := uid(211), uid(212), uid(213), uid(214)

	row1 := rowClients(NoTag, NoTag, NoProfile,
		[]Step{gtsV0(NoTag, ZERO, x1), pushV0(NoTag, x1, false, 1, errNone)},
		[]Step{gtsV0(NoTag, ZERO, x2), pushV0(NoTag, x2, false, 1, errNone)})
	// R: "or ZERO": a client that writes an explicit ZERO tag 0 in every
	// flexible header, which the seed text makes the same as no tag.
	row1 = append(row1, Conn{Client: ep("10.0.1.32:45120"), Broker: broker1, ClientID: "stock-app", Steps: []Step{
		apiVersions(Tag(ZERO)),
		metadata(Tag(ZERO), "orders"),
		gtsV0(Tag(ZERO), ZERO, x3),
		pushV0(Tag(ZERO), x3, false, 1, errNone),
	}})

	return []Scenario{
		{
			Name: "gts-row1-initial",
			Description: "seed table row 1: no H (or an explicit ZERO tag), R = ZERO: both brokers assign B and answer NONE, and each client pushes with its B; " +
				"nothing to find",
			Format: netsim.PcapNG, Seed: 201,
			Covers:  []string{"row 1/enforces", "row 1/ignores"},
			Brokers: []Broker{{broker1, Unknown}, {broker2, Unknown}},
			Conns:   row1,
		},
		{
			Name: "gts-row2-non-initial",
			Description: "seed table row 2: no H, R = an ID the client got before the capture: broker1 echoes R, broker2 returns ZERO, both NONE; " +
				"the pushes that follow use R; nothing to find",
			Format: netsim.PcapNG, Seed: 202,
			Covers:  []string{"row 2/enforces", "row 2/ignores"},
			Brokers: []Broker{{broker1, Unknown}, {broker2, Unknown}},
			Conns: rowClients(NoTag, NoTag, NoProfile,
				[]Step{gtsV0(NoTag, k1, k1), pushV0(NoTag, k1, false, 1, errNone)},
				[]Step{gtsV0(NoTag, k2, ZERO), pushV0(NoTag, k2, false, 1, errNone)}),
		},
		{
			Name: "gts-row3-header-matches-body",
			Description: "seed table row 3: H in every header and R = H: both brokers answer NONE (broker1 echoes H, broker2 returns ZERO); " +
				"nothing to find",
			Format: netsim.PcapNG, Seed: 203,
			Covers:  []string{"row 3/enforces", "row 3/ignores"},
			Brokers: []Broker{{broker1, Unknown}, {broker2, Unknown}},
			Conns: rowClients(Tag(h1), Tag(h2), Seed,
				[]Step{gtsV0(Tag(h1), h1, h1), pushV0(Tag(h1), h1, false, 1, errNone)},
				[]Step{gtsV0(Tag(h2), h2, ZERO), pushV0(Tag(h2), h2, false, 1, errNone)}),
		},
		{
			Name: "gts-row4-body-zero",
			Description: "seed table row 4: H in the header, R = ZERO: telemetry-body-mismatch for both; broker1 answers INVALID_REQUEST (enforces), " +
				"broker2 assigns a new B with NONE (ignores)",
			Format: netsim.PcapNG, Seed: 204,
			Covers:  []string{"row 4/enforces", "row 4/ignores"},
			Brokers: []Broker{{broker1, Enforces}, {broker2, Ignores}},
			Conns: rowClients(Tag(h3), Tag(h4), Seed,
				[]Step{gtsV0Err(Tag(h3), ZERO, errInvalidRequest).find("telemetry-body-mismatch")},
				[]Step{gtsV0(Tag(h4), ZERO, x4).find("telemetry-body-mismatch")}),
		},
		{
			Name: "gts-row5-body-differs",
			Description: "seed table row 5: H in the header, R ≠ H: telemetry-body-mismatch for both; broker1 answers INVALID_REQUEST (enforces), " +
				"broker2 takes R as a non-initial request and answers NONE (ignores)",
			Format: netsim.PcapNG, Seed: 205,
			Covers:  []string{"row 5/enforces", "row 5/ignores"},
			Brokers: []Broker{{broker1, Enforces}, {broker2, Ignores}},
			Conns: rowClients(Tag(h5), Tag(h6), Seed,
				[]Step{gtsV0Err(Tag(h5), r5, errInvalidRequest).find("telemetry-body-mismatch")},
				[]Step{gtsV0(Tag(h6), r6, ZERO).find("telemetry-body-mismatch")}),
		},
	}
}
