package ipmitest

import (
	"context"
	"encoding/binary"
	"net"

	gobmc "github.com/bougou/go-ipmi/pkg/bmc"
	"github.com/bougou/go-ipmi/pkg/handlers"

	"github.com/bougou/go-ipmi/pkg/protocol"
	"github.com/bougou/go-ipmi/pkg/rmcpplus"
	"github.com/bougou/go-ipmi/pkg/types"
)

// go-ipmi's reference server keys sessions by the BMC session ID alone and
// handles RAKP inside package server, out of reach of its handler registry.
// The session-layer behaviour real BMCs have and go-ipmi lacks is therefore
// played here, on the packets, before go-ipmi sees them:
//
//   - an idle session expires (Options.SessionTimeout, by Options.Clock,
//     checked when its next request arrives, so a fake clock moves it);
//   - a BMC reset forgets every session;
//   - RAKP 1 naming a user the BMC does not have is answered with RAKP 2
//     status 0Dh (unauthorized name), as OpenIPMI's ipmi_sim and most BMCs
//     do, instead of go-ipmi's RAKP 2 keyed with an empty password;
//   - RAKP 3 whose authentication code does not match (a wrong password)
//     is answered with RAKP 4 status 0Fh (invalid integrity check value),
//     not go-ipmi's 0Dh, so the two refusals stay distinguishable.

// RMCP+ payload types the session layer looks at (IPMI v2.0 table 13-16).
const (
	payloadRAKP1 = 0x12
	payloadRAKP3 = 0x14
)

// inSessionID returns the session ID of an in-session RMCP+ IPMI request,
// or ok false for anything else (session setup, IPMI v1.5, ASF).
func inSessionID(pkt []byte) (id uint32, ok bool) {
	typ, ok := rmcpPlusType(pkt)
	if !ok || typ != payloadIPMI {
		return 0, false
	}
	id = binary.LittleEndian.Uint32(pkt[6:10])
	return id, id != 0
}

// rakp1User decodes an RAKP message 1 (IPMI v2.0 table 13-11): the BMC
// session ID it continues, its tag and the user name it names. Hand-written
// rather than go-ipmi's RAKPMessage1.Unpack, which panics on a user name
// length past 227 (its bounds check overflows a byte; FuzzSessionLayer).
func rakp1User(pkt []byte) (bmcSessionID uint32, tag uint8, user string, ok bool) {
	_, _, typ, _, payload, ok := protocol.ParseRMCPPlusHeader(pkt)
	if !ok || pkt[4] != 0x06 || typ != payloadRAKP1 || len(payload) < 28 {
		return 0, 0, "", false
	}
	n := int(payload[27])
	if len(payload) < 28+n {
		return 0, 0, "", false
	}
	return binary.LittleEndian.Uint32(payload[4:8]), payload[0], string(payload[28 : 28+n]), true
}

// admit decides whether an incoming packet reaches go-ipmi. It drops
// requests on expired sessions and answers RAKP 1 for unknown users
// itself.
func (c *silenceableConn) admit(pkt []byte, addr net.Addr) bool {
	if id, ok := inSessionID(pkt); ok {
		return c.touch(id)
	}
	if typ, ok := rmcpPlusType(pkt); ok && typ == payloadRAKP1 {
		msID, tag, user, ok := rakp1User(pkt)
		if !ok {
			return false // malformed: go-ipmi's decoder could panic on it
		}
		if _, err := c.bmc.Users.GetByName(user); err != nil {
			c.refuseUnknownUser(msID, tag, addr)
			return false
		}
	}
	return true
}

// touch records a request on session id and reports whether the session
// is still alive; an expired one is forgotten.
func (c *silenceableConn) touch(id uint32) bool {
	now := c.clock.Now()
	c.seenMu.Lock()
	last, known := c.seen[id]
	expired := known && now.Sub(last) > c.sessionTimeout
	if expired {
		delete(c.seen, id)
	} else {
		c.seen[id] = now
	}
	if len(c.seen) > 64 {
		// Sessions closed by their clients are never seen again; drop
		// the ones that have expired anyway.
		for k, t := range c.seen {
			if now.Sub(t) > c.sessionTimeout {
				delete(c.seen, k)
			}
		}
	}
	c.seenMu.Unlock()
	if expired {
		_ = c.bmc.Sessions.Close(id)
		return false
	}
	return true
}

// forgetSessions closes every session the BMC has seen a request on (a BMC
// reset).
func (c *silenceableConn) forgetSessions() {
	c.seenMu.Lock()
	ids := make([]uint32, 0, len(c.seen))
	for id := range c.seen {
		ids = append(ids, id)
	}
	clear(c.seen)
	c.seenMu.Unlock()
	for _, id := range ids {
		_ = c.bmc.Sessions.Close(id)
	}
}

// refuseUnknownUser answers RAKP 1 with RAKP 2 status 0Dh (unauthorized
// name) and drops the pending session.
func (c *silenceableConn) refuseUnknownUser(bmcSessionID uint32, tag uint8, addr net.Addr) {
	sess, err := c.bmc.Sessions.Get(bmcSessionID)
	if err != nil {
		return // go-ipmi answers "invalid session ID" to the like
	}
	consoleID := sess.ConsoleID
	_ = c.bmc.Sessions.Close(bmcSessionID)
	resp := &rmcpplus.RAKPMessage2{
		MessageTag:             tag,
		RmcpStatusCode:         types.RmcpStatusCodeUnauthorizedName,
		RemoteConsoleSessionID: consoleID,
	}
	_, _ = c.PacketConn.WriteTo(protocol.BuildRMCPPlusPacket(payloadRAKP2, 0, 0, 0, resp.Pack()), addr)
}

// rakp4IntegrityStatus rewrites, in place, an outgoing RAKP 4 with status
// 0Dh (go-ipmi's answer to an RAKP 3 whose authentication code does not
// match, i.e. a wrong password, since unknown users are refused at RAKP 1
// here) to status 0Fh, invalid integrity check value.
func rakp4IntegrityStatus(pkt []byte) {
	if typ, ok := rmcpPlusType(pkt); !ok || typ != payloadRAKP4 || len(pkt) < rmcpPlusPayload+2 {
		return
	}
	if pkt[rmcpPlusPayload+1] == uint8(types.RmcpStatusCodeUnauthorizedName) {
		pkt[rmcpPlusPayload+1] = uint8(types.RmcpStatusCodeInvalidIntegrityCheckValue)
	}
}

// handleGetSessionInfo implements Get Session Info (App 3Dh, IPMI v2.0
// section 22.20), which go-ipmi lacks and ipmitool's "session info" sends,
// for the current session (index 00h, or index 01h, or the current
// session's handle or ID). Other sessions are not listed: the answer then
// carries no session (handle 00h). The remote console's address is not
// known to handlers and reads as zeros.
func handleGetSessionInfo(_ context.Context, hctx *handlers.HandlerContext, req []byte) ([]byte, types.CompletionCode, error) {
	if len(req) < 1 {
		return nil, types.CodeRequestDataTruncated, nil
	}
	const handle = 0x01
	sess := hctx.Session
	active := uint8(hctx.BMC.Sessions.Count())
	head := []byte{0x00, gobmc.MaxSessions, active & 0x3f}
	if sess == nil {
		return head, types.CodeOK, nil
	}
	current := false
	switch idx := req[0]; {
	case idx == 0x00 || idx == 0x01:
		current = true
	case idx == 0xfe:
		current = len(req) >= 2 && req[1] == handle
	case idx == 0xff:
		current = len(req) >= 5 && binary.LittleEndian.Uint32(req[1:5]) == sess.BMCID
	}
	if !current {
		return head, types.CodeOK, nil
	}
	var userID uint8
	if sess.User != nil {
		userID = sess.User.ID
	}
	resp := []byte{
		handle, gobmc.MaxSessions, active & 0x3f,
		userID & 0x3f,
		uint8(sess.PrivilegeLevel) & 0x0f,
		0x10 | sess.Channel&0x0f, // protocol auxiliary data 1: IPMI v2.0/RMCP+
	}
	// LAN channel: remote console IP (4), MAC (6), port (2, LS byte first).
	resp = append(resp, make([]byte, 12)...)
	return resp, types.CodeOK, nil
}
