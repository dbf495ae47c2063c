package ipmitest

import (
	"context"
	"fmt"
	"strings"

	"github.com/bougou/go-ipmi/pkg/hal/mock"

	"github.com/bmckit/bmckit/bmc"
)

// EncodeFRU builds FRU data (IPMI Platform Management FRU Information
// Storage Definition v1.0) with a board info area and a product info area
// whose fields are 8-bit ASCII, for [Options.FRU] and
// [OpenIPMIOptions.FRU]. Fields longer than 63 bytes are cut.
func EncodeFRU(board bmc.BoardInfo, product bmc.SystemInfo) []byte {
	field := func(s string) []byte {
		if len(s) > 63 {
			s = s[:63]
		}
		return append([]byte{0xc0 | byte(len(s))}, s...)
	}
	area := func(head []byte, fields ...string) []byte {
		a := append([]byte{}, head...)
		for _, f := range fields {
			a = append(a, field(f)...)
		}
		a = append(a, 0xc1)
		for (len(a)+1)%8 != 0 {
			a = append(a, 0)
		}
		a[1] = byte((len(a) + 1) / 8)
		return append(a, checksum(a))
	}
	// Board: version, length, language (English), manufacturing date
	// (minutes since 1996, 3 bytes), Manufacturer, Product Name, Serial
	// Number, Part Number, FRU File ID.
	b := area([]byte{1, 0, 25, 0, 0, 0}, board.Manufacturer, board.Product, board.SerialNumber, board.PartNumber, "")
	// Product: version, length, language, Manufacturer, Product Name,
	// Part/Model Number, Version, Serial Number, Asset Tag, FRU File ID.
	p := area([]byte{1, 0, 25}, product.Manufacturer, product.Model, product.PartNumber, "", product.SerialNumber, "", "")
	header := []byte{1, 0, 0, 1, byte(1 + len(b)/8), 0, 0}
	header = append(header, checksum(header))
	return append(append(header, b...), p...)
}

func checksum(b []byte) byte {
	var s byte
	for _, c := range b {
		s += c
	}
	return -s
}

// newSimHAL is go-ipmi's mock HAL with the chassis ch and, when fru is
// set, FRU device 0.
func newSimHAL(ch *Chassis, fru []byte) *simHAL {
	h := mock.New()
	if len(fru) > 0 {
		_ = h.Storage().FRU().Write(context.Background(), 0, fru) // the mock's store cannot fail
	}
	return &simHAL{HAL: h, chassis: ch}
}

// fruCommand is ipmi_sim's command setting FRU device 0 of the BMC, or ""
// without data.
func fruCommand(fru []byte) string {
	if len(fru) == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "mc_add_fru_data 0x20 0 %d data", len(fru))
	for _, c := range fru {
		fmt.Fprintf(&b, " 0x%02x", c)
	}
	b.WriteString("\n")
	return b.String()
}
