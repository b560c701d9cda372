package report

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/kidscope/kidscope/decode"
	"github.com/kidscope/kidscope/kafka"
	"github.com/kidscope/kidscope/rules"
)

// The words of findings: the rules give their evidence as values, and
// these say it, for every format alike.

// valueText says an expected or seen value, with its IDs written by id.
// Capture-derived text in it (client and member IDs) is as sent: each
// format escapes the whole.
func valueText(v rules.Value, id func(kafka.UUID) string) string {
	switch v.Kind {
	case rules.ValueID:
		return id(v.ID)
	case rules.ValueIDNamed:
		return namedID(v.ID, id)
	case rules.ValueNoID:
		return "no ID"
	case rules.ValueNonReserved:
		return "a non-reserved ID"
	case rules.ValueFirstV3ID:
		return "a non-reserved ID in the first header-v3 request"
	case rules.ValueNoIDFirst:
		return "no ID (the first flexible-header request carried none)"
	case rules.ValueNoIDRepeated:
		return "no ID (already established)"
	case rules.ValueHeaderID:
		return "a header instance ID"
	case rules.ValueNoIDAnywhere:
		return "no ID in the header or on the connection"
	case rules.ValueNullClientID:
		return "a null ClientId"
	case rules.ValueClientID:
		return "ClientId " + quote(v.Text)
	case rules.ValueHeaderBodyID:
		return "body ID " + id(v.ID) + " (the header's)"
	case rules.ValueBodyID:
		return "body ID " + namedID(v.ID, id)
	case rules.ValueNoPushAfterEnd:
		return "no push after the terminating one"
	case rules.ValuePushFor:
		return "push for " + id(v.ID)
	case rules.ValueExchangedID:
		return "an ID a GetTelemetrySubscriptions exchange produced"
	case rules.ValueNewID:
		return "a new client instance ID"
	case rules.ValueEchoOrZero:
		return id(v.ID) + " (echoed) or ZERO"
	case rules.ValueSeenElsewhereID:
		return id(v.ID) + " (already seen on another connection)"
	case rules.ValueAccepted:
		return "the request accepted"
	case rules.ValueErrorCode:
		return decode.ErrorName(v.Code)
	case rules.ValueMemberID:
		return "member ID " + quote(v.Text)
	case rules.ValueGeneratedMemberID:
		return "a client-generated member ID"
	case rules.ValueEmptyMemberID:
		return "an empty member ID"
	case rules.ValueJoinGroupV4:
		return "JoinGroup v4+ for MEMBER_ID_REQUIRED"
	case rules.ValueJoinGroupVersion:
		return "JoinGroup v" + strconv.Itoa(int(v.Version))
	case rules.ValueOneAddress:
		return "one client address (" + v.Addr.String() + ")"
	case rules.ValueAlsoFrom:
		return id(v.ID) + " also from " + v.Addr.String()
	case rules.ValueOtherConnection:
		return id(v.ID) + " (as its other open connection)"
	case rules.ValueNotKafka:
		return v.Text
	}
	return ""
}

// namedID writes the reserved IDs by name.
func namedID(u kafka.UUID, id func(kafka.UUID) string) string {
	switch {
	case u.IsZero():
		return "ZERO"
	case u.IsOne():
		return "ONE"
	}
	return id(u)
}

// quote writes a capture's string in quotes, made safe to print (shown):
// findings' texts reach terminals, Markdown and CSV.
func quote(s string) string { return "\"" + shown(s) + "\"" }

func kafkaUUID(u kafka.UUID) string { return u.String() }

// Answer texts that are no error code.
const (
	noResponseText         = "no response in capture"
	noResponseByDesignText = "none expected (acks = 0)"
	closedByBrokerText     = "connection closed by the broker"
)

// answerName names the broker's answer: its codes' names, or what became
// of the request; "" when the answer carries no error code, or the finding
// concerns no request.
func answerName(a rules.Answer) string {
	switch a.State {
	case rules.Answered:
		names := make([]string, len(a.Codes))
		for i, c := range a.Codes {
			names[i] = decode.ErrorName(c)
		}
		return strings.Join(names, ", ")
	case rules.NoResponse:
		return noResponseText
	case rules.NoResponseByDesign:
		return noResponseByDesignText
	case rules.ClosedByBroker:
		return closedByBrokerText
	}
	return ""
}

// findingMessage is a finding's one sentence: for a request, its API and
// the rule's summary with what limits it; for the stream, what the bytes
// showed.
func findingMessage(f *rules.Finding) string {
	switch f.Stream.Kind {
	case rules.LostBytes:
		if f.Stream.Resynced {
			return fmt.Sprintf("bytes of the %ss were lost; the Kafka framing was found again %d bytes later", f.Stream.Side.Carries(), f.Stream.Skipped)
		}
		return fmt.Sprintf("bytes of the %ss were lost and the framing was not found again", f.Stream.Side.Carries())
	case rules.NotKafkaBytes:
		return "the bytes on this Kafka port are not Kafka: " + f.Seen.Text
	case rules.MissedStart:
		return "the connection began before the capture: first-request rules were not applied to it"
	case rules.UnansweredRequests:
		return plural(f.Count, "request has", "requests have") + " no response in the capture"
	}
	r, _ := rules.Lookup(f.Rule)
	s := r.Summary
	if f.HasAPI {
		s = fmt.Sprintf("%s v%d (correlation %d): %s", decode.APIName(f.APIKey), f.APIVersion, f.CorrelationID, s)
	}
	if r.Caveat != "" {
		s += " (" + r.Caveat + ")"
	}
	if f.AfterGap {
		s += "; bytes of this connection were lost before it"
	}
	if len(f.Also) > 0 {
		s += "; also: " + strings.Join(f.Also, ", ")
	}
	return s
}
