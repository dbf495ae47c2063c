package ipmi

import (
	"testing"
)

// A FRU with board and product areas in 8-bit ASCII, BCD plus and 6-bit
// ASCII fields (built by hand; ipmitest.EncodeFRU writes 8-bit ASCII only).
var fruSeed = func() []byte {
	board := []byte{1, 0, 25, 0, 0, 0,
		0xc4, 'A', 'c', 'm', 'e', // manufacturer
		0x83, 0x29, 0xdc, 0xa6, // product, 6-bit ASCII "IPMI"
		0x42, 0x12, 0x34, // serial, BCD plus "1234"
		0xc0, // part number, empty
		0xc1}
	for (len(board)+1)%8 != 0 {
		board = append(board, 0)
	}
	board[1] = byte((len(board) + 1) / 8)
	board = append(board, fruChecksum(board))
	product := []byte{1, 2, 25, 0xc1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
	product = append(product, fruChecksum(product))
	h := []byte{1, 0, 0, 1, byte(1 + len(board)/8), 0, 0}
	h = append(h, fruChecksum(h))
	return append(append(h, board...), product...)
}()

func fruChecksum(b []byte) byte { return -sum(b) }

// TestDecodeFRUFieldTypes decodes each field type.
func TestDecodeFRUFieldTypes(t *testing.T) {
	f, err := decodeFRU(fruSeed)
	if err != nil {
		t.Fatal(err)
	}
	if f.board.Manufacturer != "Acme" || f.board.Product != "IPMI" || f.board.SerialNumber != "1234" || !f.hasProduct {
		t.Fatalf("decoded %+v", f)
	}
	bad := append([]byte{}, fruSeed...)
	bad[12] ^= 0xff // inside the board area
	if _, err := decodeFRU(bad); err == nil {
		t.Fatal("a board area with a bad checksum was accepted")
	}
}

// FuzzDecodeIPMIInventory feeds replies through the inventory decoders
// (Get Device ID, FRU area info, Read FRU Data, FRU data): none panics,
// and decoded text fields stay within what a 63-byte field can hold.
func FuzzDecodeIPMIInventory(f *testing.F) {
	f.Add(fruSeed)
	f.Add([]byte{0x20, 0x01, 0x81, 0x05, 0x02})
	f.Add([]byte{0x00, 0x01, 0x00})
	f.Add([]byte{0x03, 1, 2, 3})
	f.Add([]byte{1, 0, 0, 0, 0, 0, 0, 0xff})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = decodeDeviceIDFirmware(b)
		_, _, _ = decodeFRUAreaInfo(b)
		if d, err := decodeFRURead(b); err == nil && len(d) != len(b)-1 {
			t.Fatalf("Read FRU Data: %d bytes from %d", len(d), len(b))
		}
		fru, err := decodeFRU(b)
		if err != nil {
			return
		}
		for _, s := range []string{fru.board.Manufacturer, fru.board.Product, fru.board.SerialNumber, fru.board.PartNumber,
			fru.product.Manufacturer, fru.product.Model, fru.product.PartNumber, fru.product.SerialNumber} {
			if len(s) > 2*63 {
				t.Fatalf("a field decoded to %d bytes", len(s))
			}
		}
	})
}
