package ipmi

import (
	"encoding/binary"
	"errors"
	"testing"

	"github.com/bougou/go-ipmi/pkg/types"

	"github.com/bmckit/bmckit/bmc"
)

// packet builds an RMCP+ datagram.
func packet(typ uint8, sessionID uint32, payload []byte) []byte {
	p := []byte{0x06, 0x00, 0xff, 0x07, 0x06, typ}
	p = binary.LittleEndian.AppendUint32(p, sessionID)
	p = binary.LittleEndian.AppendUint32(p, 1)
	p = binary.LittleEndian.AppendUint16(p, uint16(len(payload)))
	return append(p, payload...)
}

// setup builds a session-setup reply payload: tag, status, 2 bytes, the
// console session ID, then filler.
func setup(status uint8, console uint32) []byte {
	p := []byte{0, status, 0, 0}
	p = binary.LittleEndian.AppendUint32(p, console)
	return append(p, make([]byte, 28)...)
}

func TestDropReason(t *testing.T) {
	const me, old = 0x11223344, 0xa0a1a2a3
	cases := []struct {
		name string
		pkt  []byte
		want int
		drop bool
	}{
		{"in-session reply", packet(0xc0, me, make([]byte, 32)), payloadIPMI, false},
		{"old session's reply", packet(0xc0, old, make([]byte, 32)), payloadIPMI, true},
		{"IPMI reply while opening a session", packet(0xc0, me, make([]byte, 32)), payloadOpenSessionResp, true},
		{"open session response", packet(payloadOpenSessionResp, 0, setup(0, me)), payloadOpenSessionResp, false},
		{"open session response for another dial", packet(payloadOpenSessionResp, 0, setup(0, old)), payloadOpenSessionResp, true},
		{"refusal without an ID", packet(payloadOpenSessionResp, 0, setup(0x12, 0)), payloadOpenSessionResp, false},
		{"short refusal", packet(payloadRAKP2, 0, []byte{0, 0x0d}), payloadRAKP2, false},
		{"RAKP 4 while awaiting RAKP 2", packet(payloadRAKP4, 0, setup(0, me)), payloadRAKP2, true},
		{"IPMI v1.5 packet", []byte{0x06, 0x00, 0xff, 0x07, 0x00, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, payloadIPMI, true},
		{"truncated payload", packet(payloadIPMI, me, make([]byte, 32))[:30], payloadIPMI, true},
		{"anything when nothing is awaited", []byte{1, 2, 3}, noReply, false},
	}
	for _, c := range cases {
		if got := dropReason(c.pkt, c.want, me); (got != "") != c.drop {
			t.Errorf("%s: dropReason %q, want drop=%v", c.name, got, c.drop)
		}
	}
}

// FuzzDropReason feeds arbitrary datagrams to the transport's filter: it
// must not panic, and whatever it accepts while awaiting a reply is an
// RMCP+ packet of the awaited payload type, an in-session one carrying this
// session's ID.
func FuzzDropReason(f *testing.F) {
	const me = 0x11223344
	f.Add(packet(0xc0, me, make([]byte, 32)), uint8(payloadIPMI))
	f.Add(packet(payloadOpenSessionResp, 0, setup(0, me)), uint8(payloadOpenSessionResp))
	f.Add(packet(payloadRAKP2, 0, []byte{0, 0x0d}), uint8(payloadRAKP2))
	f.Add([]byte{}, uint8(payloadRAKP4))
	f.Fuzz(func(t *testing.T, pkt []byte, want uint8) {
		w := int(want & 0x3f)
		if dropReason(pkt, w, me) != "" {
			return
		}
		if len(pkt) < rmcpPlusHeader || pkt[4] != authTypeRMCPP || int(pkt[5]&0x3f) != w {
			t.Fatalf("accepted % x awaiting %#02x", pkt, w)
		}
		if w == payloadIPMI && binary.LittleEndian.Uint32(pkt[6:10]) != me {
			t.Fatalf("accepted another session's reply % x", pkt)
		}
	})
}

func TestNewConsoleIDVaries(t *testing.T) {
	seen := map[uint32]bool{}
	for range 16 {
		id := newConsoleID()
		if id == 0 || id == 0xa0a1a2a3 {
			t.Fatalf("console session ID %#x", id)
		}
		seen[id] = true
	}
	if len(seen) < 15 {
		t.Fatalf("%d distinct IDs in 16 dials", len(seen))
	}
}

// TestUndefinedCodesTransient: codes the IPMI specification does not define
// (what a stray or corrupted reply yields) are transient; defined refusals
// keep their meaning.
func TestUndefinedCodesTransient(t *testing.T) {
	cases := []struct {
		err       error
		transient bool
		unauth    bool
	}{
		{types.NewRmcpStatusError(0x3f), true, false},
		{types.NewRmcpStatusError(0xff), true, false},
		{types.NewRmcpStatusError(types.RmcpStatusCodeUnauthorizedName), false, true},
		{types.NewRmcpStatusError(types.RmcpStatusCodeIllegalParameter), false, false},
		{types.NewResponseError(0xe0, "reserved"), true, false},
		{types.NewResponseError(0x7f, "undefined"), true, false},
		{types.NewResponseError(types.CodeRequestDataFieldInvalid, "bad field"), false, false},
		{types.NewResponseError(0x80, "command-specific"), false, false},
	}
	for _, c := range cases {
		got, _ := classify(c.err)
		if bmc.IsTransient(got) != c.transient || errors.Is(got, bmc.ErrUnauthorized) != c.unauth {
			t.Errorf("classify(%v) = %v: transient %v, unauthorized %v; want %v, %v", c.err, got, bmc.IsTransient(got), errors.Is(got, bmc.ErrUnauthorized), c.transient, c.unauth)
		}
	}
}
