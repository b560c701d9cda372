package rules

import (
	"strconv"

	"github.com/kidscope/kidscope/decode"
	"github.com/twmb/franz-go/pkg/kerr"
)

// groupState is what the group membership rules (RULES.md §6) remember.
type groupState struct {
	// required maps (client instance, group) to the member ID a
	// MEMBER_ID_REQUIRED answer assigned, and where.
	required bounded[string, assigned]
	// connRequired lists each open connection's keys in required. (The
	// member IDs and JoinGroup requests of a connection are kept in its
	// connState, and go with it: looking for them among every
	// connection's at each close cost as much as the rest of a run with
	// 100,000 connections.)
	connRequired map[int][]string
}

type assigned struct {
	member string
	at     Frame
}

type joinRequest struct {
	group   string
	version int16
	header  headerID
}

func newGroupState() groupState {
	return groupState{required: newBounded[string, assigned](), connRequired: map[int][]string{}}
}

func groupKey(client, group string) string { return client + "\x00" + group }

func (g *groupState) request(cs *connState, ev *decode.Event, x headerID) []cand {
	m := &ev.Msg
	h := &m.Request
	if !m.HasBody {
		return nil
	}
	switch h.APIKey {
	case decode.KeyJoinGroup:
		cs.joins.set(h.CorrelationID, joinRequest{group: m.Body.GroupID, version: h.APIVersion, header: x})
		keys := []string{groupKey(connKey(cs.info.ID), m.Body.GroupID)}
		if id, ok := linkID(cs, x); ok {
			keys = append(keys, groupKey(headerKey(id), m.Body.GroupID))
		}
		for _, k := range keys {
			a, ok := g.required.get(k)
			if !ok {
				continue
			}
			// This is the client's next JoinGroup for the group.
			for _, k := range keys {
				g.required.delete(k)
			}
			if m.Body.MemberID != a.member {
				return []cand{{rule: JoinMemberIDNotUsed, expected: "member ID " + quote(a.member), seen: "member ID " + quote(m.Body.MemberID),
					related: []Frame{a.at}}}
			}
			return nil
		}
	case decode.KeyConsumerGroupHeartbeat:
		var out []cand
		if h.APIVersion >= 1 && m.Body.MemberID == "" {
			out = append(out, cand{rule: HeartbeatMemberIDEmpty, expected: "a client-generated member ID", seen: "an empty member ID"})
		}
		last, _ := cs.members.get(m.Body.GroupID)
		if m.Body.MemberID != "" && last != "" && m.Body.MemberID != last {
			out = append(out, cand{rule: HeartbeatMemberIDChanged, expected: "member ID " + quote(last), seen: "member ID " + quote(m.Body.MemberID)})
		}
		switch {
		case m.Body.MemberEpoch < 0:
			cs.members.take(m.Body.GroupID) // leaving: a new member ID may follow
		case m.Body.MemberID != "":
			cs.members.set(m.Body.GroupID, m.Body.MemberID)
		}
		return out
	}
	return nil
}

// linkID is the header instance ID that links a connection to others of
// the same client instance.
func linkID(cs *connState, x headerID) (decode.UUID, bool) {
	if x.carries {
		return x.id, true
	}
	return cs.firstID, cs.hasFirstID
}

func (g *groupState) response(cs *connState, ev *decode.Event) []cand {
	m := &ev.Msg
	switch m.Request.APIKey {
	case decode.KeyJoinGroup:
		req, ok := cs.joins.take(m.Request.CorrelationID)
		if !ok || !m.HasErrorCode || m.ErrorCode != kerr.MemberIDRequired.Code {
			return nil
		}
		a := assigned{member: m.Body.MemberID, at: frameOf(ev.At)}
		ck := groupKey(connKey(cs.info.ID), req.group)
		g.required.set(ck, a)
		g.connRequired[cs.info.ID] = append(g.connRequired[cs.info.ID], ck)
		if id, ok := linkID(cs, req.header); ok {
			g.required.set(groupKey(headerKey(id), req.group), a)
		}
		if req.version <= 3 {
			return []cand{{rule: JoinMemberIDRequiredOldVersion, expected: "JoinGroup v4+ for MEMBER_ID_REQUIRED",
				seen: "JoinGroup v" + strconv.Itoa(int(req.version))}}
		}
	}
	return nil
}

// forget drops what was kept for a closed connection.
func (g *groupState) forget(conn int) {
	for _, k := range g.connRequired[conn] {
		g.required.delete(k)
	}
	delete(g.connRequired, conn)
}
