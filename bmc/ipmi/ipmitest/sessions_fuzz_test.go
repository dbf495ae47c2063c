package ipmitest

import (
	"bytes"
	"context"
	"testing"

	gobmc "github.com/bougou/go-ipmi/pkg/bmc"
	"github.com/bougou/go-ipmi/pkg/handlers"
	"github.com/bougou/go-ipmi/pkg/protocol"
	"github.com/bougou/go-ipmi/pkg/rmcpplus"
	"github.com/bougou/go-ipmi/pkg/types"
)

// FuzzSessionLayer feeds arbitrary datagrams to the simulator's packet
// inspection (in-session ID, RAKP 1 user name, RAKP 4 status rewrite):
// none may panic, and a decoded RAKP 1 must round-trip.
func FuzzSessionLayer(f *testing.F) {
	rakp1 := &rmcpplus.RAKPMessage1{MessageTag: 7, ManagedSystemSessionID: 0x01020304, UsernameLength: 5, Username: []byte("admin")}
	f.Add(protocol.BuildRMCPPlusPacket(payloadRAKP1, 0, 0, 0, rakp1.Pack()))
	f.Add(protocol.BuildRMCPPlusPacket(payloadRAKP4, 0, 0, 0, []byte{1, 0x0d, 0, 0, 1, 2, 3, 4}))
	f.Add(protocol.BuildRMCPPlusPacket(payloadIPMI, 0, 0xdeadbeef, 1, []byte{0x20, 0x18}))
	f.Add([]byte{0x06, 0, 0xff, 0x07, 0x06, 0x12})
	f.Fuzz(func(t *testing.T, pkt []byte) {
		_, _ = inSessionID(pkt)
		if id, tag, user, ok := rakp1User(pkt); ok {
			m := &rmcpplus.RAKPMessage1{MessageTag: tag, ManagedSystemSessionID: id, UsernameLength: uint8(len(user)), Username: []byte(user)}
			id2, tag2, user2, ok2 := rakp1User(protocol.BuildRMCPPlusPacket(payloadRAKP1, 0, 0, 0, m.Pack()))
			if !ok2 || id2 != id || tag2 != tag || user2 != user {
				t.Fatalf("RAKP 1 round trip: %x %d %q -> %x %d %q %t", id, tag, user, id2, tag2, user2, ok2)
			}
		}
		cp := bytes.Clone(pkt)
		rakp4IntegrityStatus(cp)
		if len(cp) != len(pkt) {
			t.Fatal("rewrite changed the length")
		}
		for i := range cp {
			if cp[i] != pkt[i] && i != rmcpPlusPayload+1 {
				t.Fatalf("rewrite changed byte %d", i)
			}
		}
		downgradeOpenSession(bytes.Clone(pkt))
	})
}

// FuzzGetSessionInfo: any request data gets an answer or a completion code,
// never a panic, with and without a session.
func FuzzGetSessionInfo(f *testing.F) {
	for _, s := range [][]byte{{0x00}, {0x01}, {0xfe, 0x01}, {0xff, 1, 2, 3, 4}, {}, {0xff}} {
		f.Add(s)
	}
	b := gobmc.New(gobmc.DeviceInfo{}, [16]byte{}, nil)
	sess := &gobmc.Session{BMCID: 0x04030201, Channel: 1}
	f.Fuzz(func(t *testing.T, req []byte) {
		for _, s := range []*gobmc.Session{nil, sess} {
			resp, cc, err := handleGetSessionInfo(context.Background(), &handlers.HandlerContext{BMC: b, Session: s}, req)
			if err != nil || cc == types.CodeOK && len(resp) < 3 {
				t.Fatalf("request %x: %x, %v, %v", req, resp, cc, err)
			}
		}
	})
}
