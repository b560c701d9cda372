package report

import (
	"fmt"
	"strings"

	"github.com/kidscope/kidscope/decode"
	"github.com/kidscope/kidscope/kafka"
	"github.com/kidscope/kidscope/rules"
)

// The words of findings: the rules give their evidence as values, and
// these say it, for every format alike.

// valueText says an expected or seen value, with its IDs written by id:
// the words of its typed form (evidence_json.go), which JSON writes.
// Capture-derived text in it (client and member IDs) is as sent: each
// format escapes the whole.
func valueText(v rules.Value, id func(kafka.UUID) string) string {
	return newEvidenceValue(v, id).text()
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
	if f.Count > 1 {
		s += fmt.Sprintf("; reported once for %d requests", f.Count)
	}
	return s
}
