package ipmi

import (
	"context"
	"errors"
	"fmt"

	"github.com/bougou/go-ipmi/pkg/client"
	"github.com/bougou/go-ipmi/pkg/command/app"
	"github.com/bougou/go-ipmi/pkg/command/storage"
	"github.com/bougou/go-ipmi/pkg/types"

	"github.com/bmckit/bmckit/bmc"
)

var (
	_ bmc.InventoryReader = (*Driver)(nil)
	_ bmc.BIOSConfigurer  = (*Driver)(nil)
)

// maxFRU bounds how much FRU data the driver reads (the board and product
// areas sit in the first few hundred bytes).
const maxFRU = 2048

// fruChunk is how much one Read FRU Data asks for: small enough for any
// BMC's message size.
const fruChunk = 32

// Inventory implements [bmc.InventoryReader] with what IPMI offers: the
// board and product areas of FRU device 0 (Get FRU Inventory Area Info,
// then Read FRU Data in 32-byte chunks) and the BMC's own firmware
// revision (Get Device ID). Processors, memory, storage and network are
// not part of IPMI and are listed in Inventory.Unsupported, and so are the
// board and product areas when the BMC has no FRU data.
func (d *Driver) Inventory(ctx context.Context) (bmc.Inventory, error) {
	inv := bmc.Inventory{Unsupported: []bmc.InventorySection{bmc.InventoryProcessors, bmc.InventoryMemory, bmc.InventoryStorage, bmc.InventoryNetwork}}
	err := d.do(ctx, "read inventory", func(ctx context.Context, c *client.Client) error {
		var raw rawResponse
		if err := d.exchange(ctx, c, &app.GetDeviceIDRequest{}, &raw); err != nil {
			return fmt.Errorf("get device ID: %w", err)
		}
		v, err := decodeDeviceIDFirmware(raw.data)
		if err != nil {
			return bmc.Permanent(err)
		}
		inv.Firmware = []bmc.FirmwareComponent{{ID: "BMC", Name: "BMC firmware", Version: v}}
		data, err := d.readFRU(ctx, c)
		if err != nil {
			return err
		}
		var fru fruInfo
		if data != nil {
			if fru, err = decodeFRU(data); err != nil {
				return bmc.Permanent(fmt.Errorf("FRU device 0: %w", err))
			}
		}
		inv.Board, inv.System = fru.board, fru.product
		if !fru.hasBoard {
			inv.Unsupported = append(inv.Unsupported, bmc.InventoryBoard)
		}
		if !fru.hasProduct {
			inv.Unsupported = append(inv.Unsupported, bmc.InventorySystem)
		}
		return nil
	})
	if err != nil {
		return bmc.Inventory{}, err
	}
	inv.Bound()
	return inv, nil
}

// readFRU reads FRU device 0, up to maxFRU bytes; nil when the BMC has
// none.
func (d *Driver) readFRU(ctx context.Context, c *client.Client) ([]byte, error) {
	var raw rawResponse
	if err := d.exchange(ctx, c, &storage.GetFRUInventoryAreaInfoRequest{FRUDeviceID: 0}, &raw); err != nil {
		if noFRU(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("get FRU inventory area info: %w", err)
	}
	size, words, err := decodeFRUAreaInfo(raw.data)
	if err != nil {
		return nil, bmc.Permanent(err)
	}
	if words {
		return nil, bmc.Permanent(fmt.Errorf("FRU device 0 is accessed by words, which this driver does not read: %w", bmc.ErrNotSupported))
	}
	size = min(size, maxFRU)
	data := make([]byte, 0, size)
	for len(data) < size {
		n := min(fruChunk, size-len(data))
		raw.data = nil
		req := &storage.ReadFRUDataRequest{FRUDeviceID: 0, ReadOffset: uint16(len(data)), ReadCount: uint8(n)}
		if err := d.exchange(ctx, c, req, &raw); err != nil {
			return nil, fmt.Errorf("read FRU data at offset %d: %w", len(data), err)
		}
		chunk, err := decodeFRURead(raw.data)
		if err != nil {
			return nil, bmc.Permanent(err)
		}
		if len(chunk) == 0 {
			break // the BMC has no more
		}
		data = append(data, chunk[:min(len(chunk), n)]...)
	}
	return data, nil
}

// noFRU reports a BMC without FRU device 0: the command is not supported
// or the data not present.
func noFRU(err error) bool {
	if errors.Is(err, bmc.ErrNotSupported) {
		return true
	}
	var re interface{ CompletionCode() types.CompletionCode }
	if errors.As(err, &re) {
		switch re.CompletionCode() {
		case types.CodeRequestedDataNotPresent, types.CodeNotSupported, types.CodeParameterOutOfRange:
			return true
		}
	}
	return false
}

// errNoBIOS is what the BIOS methods return: IPMI defines no BIOS settings.
func (d *Driver) errNoBIOS(op string) error {
	return &bmc.OpError{Op: op, Endpoint: d.epStr, Err: fmt.Errorf("IPMI defines no BIOS attribute interface (use the BMC's Redfish service): %w", bmc.ErrNotSupported)}
}

// BIOSSettings implements [bmc.BIOSConfigurer]: IPMI has none, so it fails
// with an error wrapping [bmc.ErrNotSupported], without a request.
func (d *Driver) BIOSSettings(context.Context) (bmc.BIOSSettings, error) {
	return bmc.BIOSSettings{}, d.errNoBIOS("read BIOS settings")
}

// BIOSRegistry implements [bmc.BIOSConfigurer]: not supported (see
// BIOSSettings).
func (d *Driver) BIOSRegistry(context.Context) (bmc.BIOSRegistry, error) {
	return bmc.BIOSRegistry{}, d.errNoBIOS("read BIOS attribute registry")
}

// SetBIOSAttributes implements [bmc.BIOSConfigurer]: not supported (see
// BIOSSettings).
func (d *Driver) SetBIOSAttributes(context.Context, bmc.BIOSAttributes) (bmc.BIOSApply, error) {
	return bmc.BIOSApply{}, d.errNoBIOS("set BIOS attributes")
}
