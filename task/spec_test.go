package task_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bmckit/bmckit/task"
)

func validSpecs() map[string]task.Spec {
	return map[string]task.Spec{
		"power on":          {Power: &task.PowerAction{Op: task.PowerOn}},
		"custom":            {Custom: &task.CustomAction{Kind: "example.com/raid-reset", Params: task.CustomParams(`{"controller":"RAID.Slot.3-1"}`)}},
		"custom no params":  {Custom: &task.CustomAction{Kind: "vendor.example/Clear_SEL.v2"}},
		"power off":         {Power: &task.PowerAction{Op: task.PowerOff}, Timeout: task.Duration{Duration: 90 * time.Second}},
		"power soft-off":    {Power: &task.PowerAction{Op: task.PowerSoftOff}},
		"power cycle":       {Power: &task.PowerAction{Op: task.PowerCycle}},
		"power reset":       {Power: &task.PowerAction{Op: task.PowerReset}, Name: "warm reset"},
		"boot pxe once":     {BootDevice: &task.BootDeviceAction{Device: task.BootPXE}},
		"boot disk uefi":    {BootDevice: &task.BootDeviceAction{Device: task.BootDisk, Persistent: true, Mode: task.BootModeUEFI}},
		"boot cdrom legacy": {BootDevice: &task.BootDeviceAction{Device: task.BootCDROM, Mode: task.BootModeLegacy}},
		"boot bios":         {BootDevice: &task.BootDeviceAction{Device: task.BootBIOS}},
		"media insert":      {VirtualMedia: &task.VirtualMediaAction{ImageURL: "https://images.example/live.iso"}},
		"media usb nfs":     {VirtualMedia: &task.VirtualMediaAction{Kind: task.MediaUSB, ImageURL: "nfs://10.0.0.1/export/x.img"}},
		"media eject":       {VirtualMedia: &task.VirtualMediaAction{Kind: task.MediaCD, Eject: true}},
		"wait for boot":     {WaitForBoot: &task.WaitForBootAction{SystemUUID: "4C4C4544-0047-3510-8052-B4C04F564433"}, Timeout: task.Duration{Duration: 20 * time.Minute}},
		"wait no uuid":      {WaitForBoot: &task.WaitForBootAction{}},
		"power status":      {PowerStatus: &task.PowerStatusAction{}},
		"reachable":         {Reachable: &task.ReachableAction{}, Timeout: task.Duration{Duration: 20 * time.Second}},
		"bmc reset warm":    {BMCReset: &task.BMCResetAction{Type: task.BMCResetWarm}},
		"bmc reset cold":    {BMCReset: &task.BMCResetAction{Type: task.BMCResetCold}, Timeout: task.Duration{Duration: 10 * time.Minute}},
		"boot http":         {BootDevice: &task.BootDeviceAction{Device: task.BootHTTP, URI: "https://boot.example/ipxe.efi"}},
		"locator on":        {LocatorLED: &task.LocatorLEDAction{State: task.LEDOn}},
		"locator blinking":  {LocatorLED: &task.LocatorLEDAction{State: task.LEDBlinking}, Name: "find me"},
		"locator off":       {LocatorLED: &task.LocatorLEDAction{State: task.LEDOff}},
		"nmi":               {NMI: &task.NMIAction{}},
		"boot http uefi":    {BootDevice: &task.BootDeviceAction{Device: task.BootHTTP, URI: "http://10.0.0.1:8080/a/b.efi?x=1", Mode: task.BootModeUEFI, Persistent: true}},
	}
}

func TestValidSpecsRoundTripJSON(t *testing.T) {
	for name, s := range validSpecs() {
		t.Run(name, func(t *testing.T) {
			require.NoError(t, s.Validate())
			b, err := json.Marshal(s)
			require.NoError(t, err)
			back, err := task.Decode(b)
			require.NoError(t, err, "json: %s", b)
			assert.Equal(t, s, back)
			assert.NotEmpty(t, back.Action())
		})
	}
}

func TestDecodeWireFormat(t *testing.T) {
	s, err := task.Decode([]byte(`{"name":"netboot","bootDevice":{"device":"pxe","persistent":true,"mode":"uefi"},"timeout":"2m"}`))
	require.NoError(t, err)
	assert.Equal(t, task.Spec{Name: "netboot", BootDevice: &task.BootDeviceAction{Device: task.BootPXE, Persistent: true, Mode: task.BootModeUEFI}, Timeout: task.Duration{Duration: 2 * time.Minute}}, s)
	assert.Equal(t, "bootDevice", s.Action())

	s, err = task.Decode([]byte(`{"bootDevice":{"device":"http","uri":"https://boot.example/ipxe.efi"}}`))
	require.NoError(t, err)
	assert.Equal(t, task.Spec{BootDevice: &task.BootDeviceAction{Device: task.BootHTTP, URI: "https://boot.example/ipxe.efi"}}, s)
	for in, want := range map[string]task.Spec{
		`{"powerStatus":{}}`:              {PowerStatus: &task.PowerStatusAction{}},
		`{"reachable":{}}`:                {Reachable: &task.ReachableAction{}},
		`{"bmcReset":{"type":"cold"}}`:    {BMCReset: &task.BMCResetAction{Type: task.BMCResetCold}},
		`{"name":"x","powerStatus":{}}`:   {Name: "x", PowerStatus: &task.PowerStatusAction{}},
		`{"reachable":{},"timeout":"5s"}`: {Reachable: &task.ReachableAction{}, Timeout: task.Duration{Duration: 5 * time.Second}},
	} {
		got, err := task.Decode([]byte(in))
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
		b, err := json.Marshal(got)
		require.NoError(t, err)
		assert.JSONEq(t, in, string(b))
	}
	_, err = task.Decode([]byte(`{"powerStatus":{"op":"on"}}`))
	assert.ErrorContains(t, err, `unknown field "op"`)

	b, err := json.Marshal(task.Spec{VirtualMedia: &task.VirtualMediaAction{Eject: true}})
	require.NoError(t, err)
	assert.JSONEq(t, `{"virtualMedia":{"eject":true}}`, string(b), "a zero timeout is not written")
}

func TestValidateNamesTheWrongField(t *testing.T) {
	uuid := "4c4c4544-0047-3510-8052-b4c04f564433"
	tests := []struct {
		name string
		spec task.Spec
		want []string // substrings of the error
	}{
		{"none set", task.Spec{}, []string{"no action set", "power, powerStatus, reachable, bootDevice, virtualMedia, bmcReset, waitForBoot, firmwareUpdate, inventory, bios, clearLog, locatorLED, nmi, secureBoot, bootOrder, rotateCredentials, custom"}},
		{"status and reachable", task.Spec{PowerStatus: &task.PowerStatusAction{}, Reachable: &task.ReachableAction{}}, []string{"powerStatus and reachable are all set"}},
		{"bad locator state", task.Spec{LocatorLED: &task.LocatorLEDAction{State: "Lit"}}, []string{`locatorLED.state: "Lit" is not one of on, off, blinking`}},
		{"empty locator state", task.Spec{LocatorLED: &task.LocatorLEDAction{}}, []string{`locatorLED.state: ""`}},
		{"nmi and locator", task.Spec{LocatorLED: &task.LocatorLEDAction{State: task.LEDOn}, NMI: &task.NMIAction{}}, []string{"locatorLED and nmi are all set"}},
		{"bad bmc reset type", task.Spec{BMCReset: &task.BMCResetAction{Type: "lukewarm"}}, []string{`bmcReset.type: "lukewarm" is not one of warm, cold`}},
		{"empty bmc reset type", task.Spec{BMCReset: &task.BMCResetAction{}}, []string{`bmcReset.type: ""`}},
		{"http without uri", task.Spec{BootDevice: &task.BootDeviceAction{Device: task.BootHTTP}}, []string{"bootDevice.uri: required for device http"}},
		{"uri with pxe", task.Spec{BootDevice: &task.BootDeviceAction{Device: task.BootPXE, URI: "http://h/x.efi"}}, []string{"bootDevice.uri: only device http boots from a URI"}},
		{"http legacy", task.Spec{BootDevice: &task.BootDeviceAction{Device: task.BootHTTP, URI: "http://h/x.efi", Mode: task.BootModeLegacy}}, []string{"bootDevice.mode: UEFI HTTP boot cannot boot in legacy mode"}},
		{"http uri bad scheme", task.Spec{BootDevice: &task.BootDeviceAction{Device: task.BootHTTP, URI: "tftp://h/x.efi"}}, []string{`bootDevice.uri: "tftp://h/x.efi" is not an http:// or https:// URL with a host`}},
		{"http uri no host", task.Spec{BootDevice: &task.BootDeviceAction{Device: task.BootHTTP, URI: "http:///x.efi"}}, []string{"bootDevice.uri:"}},
		{"http uri relative", task.Spec{BootDevice: &task.BootDeviceAction{Device: task.BootHTTP, URI: "x.efi"}}, []string{`bootDevice.uri: "x.efi"`}},
		{"http uri opaque", task.Spec{BootDevice: &task.BootDeviceAction{Device: task.BootHTTP, URI: "http:x.efi"}}, []string{`bootDevice.uri: "http:x.efi"`}},
		{"http uri space", task.Spec{BootDevice: &task.BootDeviceAction{Device: task.BootHTTP, URI: "http://h/a b.efi"}}, []string{"bootDevice.uri:", "spaces or control characters"}},
		{"http uri credentials", task.Spec{BootDevice: &task.BootDeviceAction{Device: task.BootHTTP, URI: "https://admin:hunter2@h/x.efi"}}, []string{"bootDevice.uri: credentials in the boot URI are not accepted"}},
		{"http uri credentials bad scheme", task.Spec{BootDevice: &task.BootDeviceAction{Device: task.BootHTTP, URI: "ftp://a:hunter2@h/x"}}, []string{"bootDevice.uri: credentials"}},
		{"http uri too long", task.Spec{BootDevice: &task.BootDeviceAction{Device: task.BootHTTP, URI: "http://h/" + strings.Repeat("x", 2040)}}, []string{"bootDevice.uri: 2049 characters, at most 2048"}},
		{"two set", task.Spec{Power: &task.PowerAction{Op: task.PowerOn}, BootDevice: &task.BootDeviceAction{Device: task.BootPXE}}, []string{"bootDevice and power are all set", "exactly one"}},
		{"three set", task.Spec{Power: &task.PowerAction{Op: task.PowerOn}, VirtualMedia: &task.VirtualMediaAction{Eject: true}, WaitForBoot: &task.WaitForBootAction{}}, []string{"power and virtualMedia and waitForBoot are all set"}},
		{"bad power op", task.Spec{Power: &task.PowerAction{Op: "of"}}, []string{`power.op: "of" is not one of on, off, soft-off, cycle, reset`}},
		{"empty power op", task.Spec{Power: &task.PowerAction{}}, []string{`power.op: ""`}},
		{"bad device", task.Spec{BootDevice: &task.BootDeviceAction{Device: "floppy"}}, []string{`bootDevice.device: "floppy" is not one of pxe, disk, cdrom, bios, http`}},
		{"bad mode", task.Spec{BootDevice: &task.BootDeviceAction{Device: task.BootPXE, Mode: "efi"}}, []string{`bootDevice.mode: "efi" is not one of uefi, legacy`}},
		{"bad media kind", task.Spec{VirtualMedia: &task.VirtualMediaAction{Kind: "dvd", Eject: true}}, []string{`virtualMedia.kind: "dvd" is not one of cd, usb`}},
		{"insert and eject", task.Spec{VirtualMedia: &task.VirtualMediaAction{ImageURL: "http://h/x.iso", Eject: true}}, []string{"virtualMedia: imageURL and eject are both set"}},
		{"neither insert nor eject", task.Spec{VirtualMedia: &task.VirtualMediaAction{}}, []string{"virtualMedia: set imageURL to insert or eject: true to eject"}},
		{"image URL bad scheme", task.Spec{VirtualMedia: &task.VirtualMediaAction{ImageURL: "ftp://h/x.iso"}}, []string{`virtualMedia.imageURL: "ftp://h/x.iso" is not an http(s), nfs or cifs URL`}},
		{"image URL no host", task.Spec{VirtualMedia: &task.VirtualMediaAction{ImageURL: "http:///x.iso"}}, []string{"virtualMedia.imageURL:"}},
		{"image URL relative", task.Spec{VirtualMedia: &task.VirtualMediaAction{ImageURL: "x.iso"}}, []string{`virtualMedia.imageURL: "x.iso"`}},
		{"image URL unparsable", task.Spec{VirtualMedia: &task.VirtualMediaAction{ImageURL: "http://[::1/x.iso"}}, []string{"virtualMedia.imageURL:"}},
		{"credentials in image URL", task.Spec{VirtualMedia: &task.VirtualMediaAction{ImageURL: "https://admin:hunter2@h/x.iso"}}, []string{"virtualMedia.imageURL: credentials in the image URL are not accepted"}},
		{"credentials in bad-scheme image URL", task.Spec{VirtualMedia: &task.VirtualMediaAction{ImageURL: "ftp://admin:hunter2@h/x.iso"}}, []string{"virtualMedia.imageURL: credentials"}},
		{"credentials with slash in password", task.Spec{VirtualMedia: &task.VirtualMediaAction{ImageURL: "http://admin:hun/ter2@h/x.iso"}}, []string{"virtualMedia.imageURL: credentials"}},
		{"negative timeout", task.Spec{Power: &task.PowerAction{Op: task.PowerOn}, Timeout: task.Duration{Duration: -time.Second}}, []string{"timeout: -1s is negative"}},
		{"huge timeout", task.Spec{Power: &task.PowerAction{Op: task.PowerOn}, Timeout: task.Duration{Duration: 8 * 24 * time.Hour}}, []string{"timeout: 192h0m0s is longer than 7 days"}},
		{"bad waitForBoot UUID", task.Spec{WaitForBoot: &task.WaitForBootAction{SystemUUID: "not-a-uuid"}}, []string{`waitForBoot.systemUUID: "not-a-uuid" is not a UUID`}},
		{"UUID without dashes", task.Spec{WaitForBoot: &task.WaitForBootAction{SystemUUID: strings.ReplaceAll(uuid, "-", "")}}, []string{"waitForBoot.systemUUID:"}},
		{"UUID with non-hex", task.Spec{WaitForBoot: &task.WaitForBootAction{SystemUUID: "g" + uuid[1:]}}, []string{"waitForBoot.systemUUID:"}},
		{"long name", task.Spec{Name: strings.Repeat("n", 254), Power: &task.PowerAction{Op: task.PowerOn}}, []string{"name: 254 characters, at most 253"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.spec.Validate()
			require.Error(t, err)
			assert.True(t, errors.Is(err, task.ErrInvalid), "error must wrap ErrInvalid: %v", err)
			for _, w := range tt.want {
				assert.Contains(t, err.Error(), w)
			}
			assert.NotContains(t, err.Error(), "hunter2", "error repeats a password")
		})
	}
}

func TestValidateReturnsFieldError(t *testing.T) {
	tests := []struct {
		name     string
		spec     task.Spec
		path     string
		msg      string
		errorStr string
	}{
		{"bad power op", task.Spec{Power: &task.PowerAction{Op: "of"}}, "power.op",
			`"of" is not one of on, off, soft-off, cycle, reset`,
			`invalid task: power.op: "of" is not one of on, off, soft-off, cycle, reset`},
		{"bad boot mode", task.Spec{BootDevice: &task.BootDeviceAction{Device: task.BootPXE, Mode: "efi"}}, "bootDevice.mode",
			`"efi" is not one of uefi, legacy (or empty to leave unchanged)`,
			`invalid task: bootDevice.mode: "efi" is not one of uefi, legacy (or empty to leave unchanged)`},
		{"insert and eject", task.Spec{VirtualMedia: &task.VirtualMediaAction{ImageURL: "http://h/x.iso", Eject: true}}, "virtualMedia",
			"imageURL and eject are both set: set one",
			"invalid task: virtualMedia: imageURL and eject are both set: set one"},
		{"negative timeout", task.Spec{Power: &task.PowerAction{Op: task.PowerOn}, Timeout: task.Duration{Duration: -time.Second}}, "timeout",
			"-1s is negative",
			"invalid task: timeout: -1s is negative"},
		{"none set", task.Spec{}, "",
			"no action set: set exactly one of power, powerStatus, reachable, bootDevice, virtualMedia, bmcReset, waitForBoot, firmwareUpdate, inventory, bios, clearLog, locatorLED, nmi, secureBoot, bootOrder, rotateCredentials, custom",
			"invalid task: no action set: set exactly one of power, powerStatus, reachable, bootDevice, virtualMedia, bmcReset, waitForBoot, firmwareUpdate, inventory, bios, clearLog, locatorLED, nmi, secureBoot, bootOrder, rotateCredentials, custom"},
		{"http without uri", task.Spec{BootDevice: &task.BootDeviceAction{Device: task.BootHTTP}}, "bootDevice.uri",
			"required for device http: the http:// or https:// URL of the EFI program to boot",
			"invalid task: bootDevice.uri: required for device http: the http:// or https:// URL of the EFI program to boot"},
		{"two set", task.Spec{Power: &task.PowerAction{Op: task.PowerOn}, BootDevice: &task.BootDeviceAction{Device: task.BootPXE}}, "",
			"bootDevice and power are all set: set exactly one action",
			"invalid task: bootDevice and power are all set: set exactly one action"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.spec.Validate()
			var fe *task.FieldError
			require.ErrorAs(t, err, &fe)
			assert.Equal(t, tt.path, fe.Path)
			assert.Equal(t, tt.msg, fe.Msg)
			assert.Equal(t, tt.errorStr, err.Error())
			assert.ErrorIs(t, err, task.ErrInvalid)
		})
	}

	// Decode's own JSON errors are FieldErrors about the whole spec.
	_, err := task.Decode([]byte(`{"power":{"op":"on"},"retries":3}`))
	var fe *task.FieldError
	require.ErrorAs(t, err, &fe)
	assert.Empty(t, fe.Path)
	assert.Contains(t, fe.Msg, `unknown field "retries"`)
	assert.Equal(t, "invalid task: "+fe.Msg, err.Error())
}

func TestValidateBoundaries(t *testing.T) {
	ok := []task.Spec{
		{Power: &task.PowerAction{Op: task.PowerOn}, Timeout: task.Duration{Duration: 7 * 24 * time.Hour}},
		{Power: &task.PowerAction{Op: task.PowerOn}, Name: strings.Repeat("n", 253)},
		{WaitForBoot: &task.WaitForBootAction{SystemUUID: "ABCDEF01-2345-6789-abcd-ef0123456789"}},
		{BootDevice: &task.BootDeviceAction{Device: task.BootHTTP, URI: "http://h/" + strings.Repeat("x", 2039)}},
		{BootDevice: &task.BootDeviceAction{Device: task.BootHTTP, URI: "HTTPS://[::1]:8443/x.efi#frag"}},
	}
	for _, s := range ok {
		assert.NoError(t, s.Validate())
	}
}

func TestDecodeIsStrict(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"unknown top-level field", `{"power":{"op":"on"},"retries":3}`, `unknown field "retries"`},
		{"unknown nested field", `{"power":{"op":"on","force":true}}`, `unknown field "force"`},
		{"trailing object", `{"power":{"op":"on"}} {}`, "trailing data"},
		{"trailing garbage", `{"power":{"op":"on"}} x`, "trailing data"},
		{"trailing brace", `{"power":{"op":"on"}}}`, "trailing data"},
		{"trailing bracket", `{"power":{"op":"on"}}]`, "trailing data"},
		{"wrong type", `{"power":{"op":1}}`, "decoding JSON"},
		{"not an object", `[]`, "decoding JSON"},
		{"empty", ``, "decoding JSON"},
		{"truncated", `{"power":{"op":"on"}`, "decoding JSON"},
		{"valid JSON invalid spec", `{"power":{"op":"sideways"}}`, `power.op: "sideways"`},
		{"bad timeout", `{"power":{"op":"on"},"timeout":"soon"}`, `invalid duration "soon"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := task.Decode([]byte(tt.in))
			require.Error(t, err)
			assert.ErrorIs(t, err, task.ErrInvalid)
			assert.Contains(t, err.Error(), tt.want)
			assert.Equal(t, task.Spec{}, s, "a failed Decode returns the zero Spec")
		})
	}
	// Trailing whitespace is fine.
	_, err := task.Decode([]byte("{\"power\":{\"op\":\"on\"}}\n\t "))
	assert.NoError(t, err)
}

func TestDescribe(t *testing.T) {
	tests := []struct {
		spec task.Spec
		want string
	}{
		{task.Spec{Power: &task.PowerAction{Op: task.PowerOff}}, "power off"},
		{task.Spec{BootDevice: &task.BootDeviceAction{Device: task.BootPXE, Mode: task.BootModeUEFI}}, "boot pxe (once, uefi)"},
		{task.Spec{BootDevice: &task.BootDeviceAction{Device: task.BootDisk, Persistent: true}}, "boot disk (persistent)"},
		{task.Spec{VirtualMedia: &task.VirtualMediaAction{ImageURL: "http://h/x"}}, "insert cd media"},
		{task.Spec{VirtualMedia: &task.VirtualMediaAction{Kind: task.MediaUSB, Eject: true}}, "eject usb"},
		{task.Spec{WaitForBoot: &task.WaitForBootAction{}}, "wait for boot"},
		{task.Spec{PowerStatus: &task.PowerStatusAction{}}, "power status"},
		{task.Spec{Reachable: &task.ReachableAction{}}, "check BMC reachable"},
		{task.Spec{BMCReset: &task.BMCResetAction{Type: task.BMCResetCold}}, "reset BMC (cold)"},
		{task.Spec{BootDevice: &task.BootDeviceAction{Device: task.BootHTTP, URI: "https://boot.example/ipxe.efi", Mode: task.BootModeUEFI}}, "boot http (once, uefi) from https://boot.example/ipxe.efi"},
		{task.Spec{LocatorLED: &task.LocatorLEDAction{State: task.LEDBlinking}}, "locator LED blinking"},
		{task.Spec{NMI: &task.NMIAction{}}, "send NMI"},
		{task.Spec{}, "empty task"},
		{task.Spec{Name: "mine", Power: &task.PowerAction{Op: task.PowerOff}}, "mine"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, tt.spec.Describe())
	}
	assert.Equal(t, task.MediaCD, (&task.VirtualMediaAction{}).MediaKindOrDefault())
	assert.Equal(t, task.MediaUSB, (&task.VirtualMediaAction{Kind: task.MediaUSB}).MediaKindOrDefault())
	assert.Equal(t, "", (&task.Spec{}).Action())
}
