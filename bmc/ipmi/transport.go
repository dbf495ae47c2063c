package ipmi

// The driver's own UDP transport under go-ipmi. go-ipmi v0.9.0 opens every
// session with the same remote console session ID (0xa0a1a2a3) and takes
// the first datagram that arrives as the answer to a session-setup message,
// whatever its payload type or session ID; for in-session requests it only
// matches the IPMI sequence number and command. A BMC that keys session
// state by client address can then answer a new dial (one that reuses a
// closed session's source port) with the old session's encrypted reply,
// which go-ipmi reads as a plain reply, taking a random byte as the status.
//
// go-ipmi dials its socket through a proxy.Dialer (Client.WithUDPProxy), so
// the driver hands it a socket of its own (sessionConn) that:
//   - writes a random, per-dial console session ID into the Open Session
//     Request (go-ipmi takes the ID back from the BMC's answer and uses that
//     in RAKP, so the rest of the handshake stays consistent), and
//   - drops every datagram that is not the answer to the message just sent:
//     not RMCP+, a payload type other than the expected reply's, a setup
//     reply for another console session ID, an in-session reply whose
//     session ID is not this session's.
// A dropped datagram is as if it never arrived: the read waits for the next
// one within go-ipmi's deadline.

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
)

// RMCP+ payload types (IPMI v2.0 section 13.27.3).
const (
	payloadIPMI            = 0x00
	payloadOpenSessionReq  = 0x10
	payloadOpenSessionResp = 0x11
	payloadRAKP1           = 0x12
	payloadRAKP2           = 0x13
	payloadRAKP3           = 0x14
	payloadRAKP4           = 0x15

	// rmcpPlusHeader is the RMCP header (4 bytes) plus the RMCP+ session
	// header without OEM fields (12 bytes): where the payload starts.
	rmcpPlusHeader = 16
	authTypeRMCPP  = 0x06
	noReply        = -1 // nothing sent yet, or a message we do not track
)

// replyTo is the payload type that answers a request payload type, or
// noReply.
func replyTo(req int) int {
	switch req {
	case payloadIPMI:
		return payloadIPMI
	case payloadOpenSessionReq:
		return payloadOpenSessionResp
	case payloadRAKP1:
		return payloadRAKP2
	case payloadRAKP3:
		return payloadRAKP4
	}
	return noReply
}

// newConsoleID returns a random remote console session ID, never 0 (which
// means "no session" on the wire).
func newConsoleID() uint32 {
	var b [4]byte
	for {
		_, _ = rand.Read(b[:]) // never fails (crypto/rand, Go 1.24+)
		if id := binary.LittleEndian.Uint32(b[:]); id != 0 {
			return id
		}
	}
}

// dropReason says why a datagram is not the awaited reply, or "" when it
// is. want is the payload type expected (noReply: accept any datagram) and
// consoleID this session's remote console session ID. It is the one decoder
// of raw datagrams in the driver, fuzzed in transport_fuzz_test.go.
func dropReason(pkt []byte, want int, consoleID uint32) string {
	if want == noReply {
		return ""
	}
	if len(pkt) < rmcpPlusHeader || pkt[4] != authTypeRMCPP {
		return "not an RMCP+ packet"
	}
	typ := int(pkt[5] & 0x3f)
	if typ != want {
		return fmt.Sprintf("payload type %#02x, awaiting %#02x", typ, want)
	}
	sid := binary.LittleEndian.Uint32(pkt[6:10])
	n := int(binary.LittleEndian.Uint16(pkt[14:16]))
	if len(pkt) < rmcpPlusHeader+n {
		return fmt.Sprintf("payload length %d beyond the %d-byte datagram", n, len(pkt))
	}
	payload := pkt[rmcpPlusHeader : rmcpPlusHeader+n]
	if typ == payloadIPMI {
		if sid != consoleID {
			return fmt.Sprintf("session ID %#08x, not this session's %#08x", sid, consoleID)
		}
		return ""
	}
	// Session setup replies: tag, status, two bytes, then the console
	// session ID (Open Session Response, RAKP 2 and RAKP 4 alike). A refusal
	// may carry no ID (0); a refusal cannot open anything, so it passes.
	if len(payload) < 8 {
		if len(payload) >= 2 && payload[1] != 0 {
			return ""
		}
		return fmt.Sprintf("%d-byte session setup reply", len(payload))
	}
	id := binary.LittleEndian.Uint32(payload[4:8])
	if id == consoleID || id == 0 && payload[1] != 0 {
		return ""
	}
	return fmt.Sprintf("console session ID %#08x, not this dial's %#08x", id, consoleID)
}

// sessionConn is the UDP socket the driver gives go-ipmi; see the comment
// at the top of this file. go-ipmi serializes its exchanges (one write,
// then reads), so want is set by Write and read by Read.
type sessionConn struct {
	net.Conn
	consoleID uint32
	dropped   *atomic.Int64

	mu   sync.Mutex
	want int
}

// Write sends a datagram; an Open Session Request gets this dial's console
// session ID.
func (c *sessionConn) Write(p []byte) (int, error) {
	want := noReply
	if len(p) >= rmcpPlusHeader && p[4] == authTypeRMCPP {
		typ := int(p[5] & 0x3f)
		want = replyTo(typ)
		if typ == payloadOpenSessionReq && len(p) >= rmcpPlusHeader+8 {
			q := append([]byte(nil), p...) // do not touch go-ipmi's buffer
			binary.LittleEndian.PutUint32(q[rmcpPlusHeader+4:], c.consoleID)
			p = q
		}
	}
	c.mu.Lock()
	c.want = want
	c.mu.Unlock()
	return c.Conn.Write(p)
}

// Read returns the next datagram that answers the last one written,
// dropping others, within the deadline go-ipmi set.
func (c *sessionConn) Read(p []byte) (int, error) {
	for {
		n, err := c.Conn.Read(p)
		if err != nil {
			return n, err
		}
		c.mu.Lock()
		want := c.want
		c.mu.Unlock()
		if dropReason(p[:n], want, c.consoleID) == "" {
			return n, nil
		}
		c.dropped.Add(1)
	}
}

// udpDialer implements golang.org/x/net/proxy.Dialer for go-ipmi's
// Client.WithUDPProxy, dialing the endpoint (go-ipmi's "host:port" address
// breaks IPv6 literals, so it is not used) with a fresh console session ID.
type udpDialer struct {
	host      string
	port      int
	consoleID uint32
	dropped   *atomic.Int64
}

func (d udpDialer) Dial(network, _ string) (net.Conn, error) {
	conn, err := net.Dial(network, net.JoinHostPort(d.host, strconv.Itoa(d.port)))
	if err != nil {
		return nil, err
	}
	return &sessionConn{Conn: conn, consoleID: d.consoleID, dropped: d.dropped, want: noReply}, nil
}
