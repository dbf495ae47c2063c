package ipmi

// Decoders of the replies the inventory reads, and of the FRU data itself
// (IPMI Platform Management FRU Information Storage Definition v1.0,
// sections 8-11: common header, board and product info areas, type/length
// bytes). They take raw reply data, so fuzz_fru_test.go covers what runs
// on the wire.

import (
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/bmckit/bmckit/bmc"
)

// decodeDeviceIDFirmware returns the BMC's firmware revision from a Get
// Device ID reply (IPMI v2.0 section 20.1): byte 2 bits 6:0 the major
// revision (binary), byte 3 the minor (BCD), e.g. "1.05".
func decodeDeviceIDFirmware(data []byte) (string, error) {
	if len(data) < 4 {
		return "", fmt.Errorf("decode Get Device ID reply: %d bytes, want at least 4", len(data))
	}
	minor := data[3]
	if minor>>4 > 9 || minor&0x0f > 9 {
		return "", fmt.Errorf("decode Get Device ID reply: minor firmware revision %02xh is not BCD", minor)
	}
	return fmt.Sprintf("%d.%02x", data[2]&0x7f, minor), nil
}

// decodeFRUAreaInfo decodes a Get FRU Inventory Area Info reply: the
// area's size in bytes and whether it is accessed by words.
func decodeFRUAreaInfo(data []byte) (size int, words bool, err error) {
	if len(data) < 3 {
		return 0, false, fmt.Errorf("decode Get FRU Inventory Area Info reply: %d bytes, want 3", len(data))
	}
	return int(binary.LittleEndian.Uint16(data[:2])), data[2]&1 == 1, nil
}

// decodeFRURead decodes a Read FRU Data reply: the count, then the data.
func decodeFRURead(data []byte) ([]byte, error) {
	if len(data) < 1 || int(data[0]) != len(data)-1 {
		return nil, fmt.Errorf("decode Read FRU Data reply (% x): the count does not match the data", data)
	}
	return data[1:], nil
}

// fruInfo is what the inventory takes from FRU data.
type fruInfo struct {
	board   bmc.BoardInfo
	product bmc.SystemInfo
	// hasBoard and hasProduct say which areas the FRU has.
	hasBoard, hasProduct bool
}

// decodeFRU decodes a FRU's common header and its board and product info
// areas. Checksums are checked; an area that fails its checksum or runs
// past the data is an error naming it.
func decodeFRU(data []byte) (fruInfo, error) {
	var out fruInfo
	if len(data) < 8 {
		return out, fmt.Errorf("FRU common header: %d bytes, want 8", len(data))
	}
	h := data[:8]
	if h[0]&0x0f != 1 {
		return out, fmt.Errorf("FRU common header: format version %d, want 1", h[0]&0x0f)
	}
	if sum(h) != 0 {
		return out, fmt.Errorf("FRU common header: bad checksum")
	}
	if off := int(h[3]) * 8; off != 0 {
		f, err := fruArea(data, off, "board", 4)
		if err != nil {
			return out, err
		}
		out.hasBoard = true
		out.board = bmc.BoardInfo{Manufacturer: f[0], Product: f[1], SerialNumber: f[2], PartNumber: f[3]}
	}
	if off := int(h[4]) * 8; off != 0 {
		f, err := fruArea(data, off, "product", 1)
		if err != nil {
			return out, err
		}
		out.hasProduct = true
		// Manufacturer, Product Name, Part/Model Number, Version, Serial Number.
		out.product = bmc.SystemInfo{Manufacturer: f[0], Model: f[1], PartNumber: f[2], SerialNumber: f[4]}
	}
	return out, nil
}

// fruArea reads the first five type/length fields of the info area at
// off; skip is the number of bytes after version and length before the
// first field (board: language and the 3-byte date, 4; product: language, 1).
func fruArea(data []byte, off int, name string, skip int) ([5]string, error) {
	var f [5]string
	if off+2 > len(data) {
		return f, fmt.Errorf("FRU %s area at offset %d: past the end of the %d bytes read", name, off, len(data))
	}
	n := int(data[off+1]) * 8
	if data[off]&0x0f != 1 || n < 8 || off+n > len(data) {
		return f, fmt.Errorf("FRU %s area at offset %d: version %d, length %d: invalid or past the end of the %d bytes read", name, off, data[off]&0x0f, n, len(data))
	}
	area := data[off : off+n]
	if sum(area) != 0 {
		return f, fmt.Errorf("FRU %s area: bad checksum", name)
	}
	p := 2 + skip // version, length, then skip bytes
	for i := range f {
		if p >= len(area) {
			return f, fmt.Errorf("FRU %s area: field %d past the end of the area", name, i+1)
		}
		tl := area[p]
		if tl == 0xc1 {
			break // end of fields
		}
		l := int(tl & 0x3f)
		if p+1+l > len(area) {
			return f, fmt.Errorf("FRU %s area: field %d (%d bytes) past the end of the area", name, i+1, l)
		}
		f[i] = fruText(tl>>6, area[p+1:p+1+l])
		p += 1 + l
	}
	return f, nil
}

// fruText decodes one field by its type: 0 binary (hex), 1 BCD plus,
// 2 6-bit ASCII packed, 3 8-bit ASCII / Latin-1.
func fruText(typ byte, b []byte) string {
	switch typ {
	case 0:
		return fmt.Sprintf("%x", b)
	case 1:
		const digits = "0123456789 -.:,_"
		var s strings.Builder
		for _, c := range b {
			s.WriteByte(digits[c>>4])
			s.WriteByte(digits[c&0x0f])
		}
		return strings.TrimSpace(s.String())
	case 2:
		// Four 6-bit characters (ASCII 20h-5Fh) in each 3 bytes, least
		// significant bits first; a last partial group holds bits*8/6.
		var s strings.Builder
		for i := 0; i < len(b); i += 3 {
			n := min(3, len(b)-i)
			var v uint32
			for j := 0; j < n; j++ {
				v |= uint32(b[i+j]) << (8 * j)
			}
			for k := 0; k < n*8/6; k++ {
				s.WriteByte(byte(v>>(6*k))&0x3f + 0x20)
			}
		}
		return strings.TrimSpace(s.String())
	}
	var s strings.Builder
	for _, c := range b {
		s.WriteRune(rune(c)) // Latin-1
	}
	return strings.TrimSpace(strings.TrimRight(s.String(), "\x00"))
}

func sum(b []byte) byte {
	var s byte
	for _, c := range b {
		s += c
	}
	return s
}
