package bmc

// Capability names a feature a BMC may lack although its driver implements
// the interface for it (a Redfish BMC without virtual media, an IPMI BMC that
// cannot report its boot flags). It is the shared vocabulary of package fake
// (Options.Unsupported removes capabilities from a fake BMC) and package
// bmctest (Options.Unsupported tells the suite what a peer lacks), so one
// list configures both.
type Capability string

// Capabilities a BMC may lack.
const (
	// CapabilityBootOverride: SetBootOverride (and BootOverride) fail.
	CapabilityBootOverride Capability = "boot-override"
	// CapabilityBootOverrideReadBack: SetBootOverride works, BootOverride
	// (the read-back) fails, as on BMCs that cannot report the override.
	CapabilityBootOverrideReadBack Capability = "boot-override-read-back"
	// CapabilityBootMode: setting a BootOverride with a Mode other than
	// BootModeUnchanged fails.
	CapabilityBootMode Capability = "boot-mode"
	// CapabilityBootHTTP: setting a BootOverride with BootDeviceUEFIHTTP
	// (UEFI HTTP boot from a URI) fails, as on IPMI BMCs and Redfish
	// services without UefiHttp or HttpBootUri.
	CapabilityBootHTTP Capability = "boot-http"
	// CapabilityVirtualMediaCD: the CD virtual media device is missing.
	CapabilityVirtualMediaCD Capability = "virtual-media-cd"
	// CapabilityVirtualMediaUSB: the USB virtual media device is missing.
	CapabilityVirtualMediaUSB Capability = "virtual-media-usb"
	// CapabilityBMCReset: ResetBMC fails, whatever the reset type.
	CapabilityBMCReset Capability = "bmc-reset"
	// CapabilityBMCResetWarm: ResetBMC(BMCResetWarm) fails, as on BMCs
	// that offer only a forced restart of themselves (AMI MegaRAC lists
	// ForceRestart alone). Implied by CapabilityBMCReset.
	CapabilityBMCResetWarm Capability = "bmc-reset-warm"
	// CapabilityBMCResetCold: ResetBMC(BMCResetCold) fails. Implied by
	// CapabilityBMCReset.
	CapabilityBMCResetCold Capability = "bmc-reset-cold"
	// CapabilityPowerSoftOff: SetPower(PowerActionSoftOff) fails on a server
	// that is on.
	CapabilityPowerSoftOff Capability = "power-soft-off"
	// CapabilityPowerCycle: SetPower(PowerActionCycle) fails on a server
	// that is on (a BMC that advertises PowerCycle and then refuses it).
	CapabilityPowerCycle Capability = "power-cycle"
	// CapabilityPowerReset: SetPower(PowerActionReset) fails on a server
	// that is on.
	CapabilityPowerReset Capability = "power-reset"
	// CapabilityLastResetTime: LastResetTime (bmc.LastResetReader) fails,
	// as on BMCs that do not report when the system last reset.
	CapabilityLastResetTime Capability = "last-reset-time"
	// CapabilityFirmwareUpdate: the calls of bmc.FirmwareUpdater fail, as
	// on BMCs without an UpdateService or a TaskService to follow an
	// update with.
	CapabilityFirmwareUpdate Capability = "firmware-update"
	// CapabilityInventory: Inventory (bmc.InventoryReader) fails.
	CapabilityInventory Capability = "inventory"
	// CapabilityBIOS: BIOSSettings, BIOSRegistry and SetBIOSAttributes
	// (bmc.BIOSConfigurer) fail, as on IPMI BMCs.
	CapabilityBIOS Capability = "bios"
	// CapabilityHealth: Health (bmc.HealthReader) fails, as on BMCs
	// whose resources carry no Status. SystemStatus still reads power,
	// with the health unknown.
	CapabilityHealth Capability = "health"
	// CapabilityEventLogs: LogServices and LogEntries (bmc.EventLogReader)
	// fail, as on BMCs without LogServices.
	CapabilityEventLogs Capability = "event-logs"
	// CapabilityEventLogClear: ClearLog (bmc.EventLogClearer) fails on
	// every log, as on logs without a ClearLog action. Implied by
	// CapabilityEventLogs.
	CapabilityEventLogClear Capability = "event-log-clear"
	// CapabilityLocatorLED: LocatorLED and SetLocatorLED (bmc.LocatorLED)
	// fail, as on BMCs whose system and chassis have no locator.
	CapabilityLocatorLED Capability = "locator-led"
	// CapabilityLocatorLEDBlink: SetLocatorLED(LEDBlinking) fails, as on
	// BMCs with only LocationIndicatorActive, and on IPMI. Implied by
	// CapabilityLocatorLED.
	CapabilityLocatorLEDBlink Capability = "locator-led-blink"
	// CapabilityLocatorLEDReadBack: SetLocatorLED works, LocatorLED (the
	// read-back) fails, as on IPMI BMCs whose Get Chassis Status does not
	// report the identify state. Implied by CapabilityLocatorLED.
	CapabilityLocatorLEDReadBack Capability = "locator-led-read-back"
	// CapabilityNMI: SendNMI (bmc.NMISender) fails, as on BMCs that do not
	// list Nmi among the reset types or refuse the diagnostic interrupt.
	CapabilityNMI Capability = "nmi"
	// CapabilityAccounts: the calls of bmc.AccountManager fail, as on
	// BMCs without an AccountService.
	CapabilityAccounts Capability = "accounts"
	// CapabilitySecureBoot: the calls of bmc.SecureBootManager fail, as on
	// IPMI BMCs and Redfish systems without a SecureBoot resource.
	CapabilitySecureBoot Capability = "secure-boot"
	// CapabilitySecureBootResetKeys: ResetSecureBootKeys fails, whatever
	// the kind (a SecureBoot without the ResetKeys action). Implied by
	// CapabilitySecureBoot.
	CapabilitySecureBootResetKeys Capability = "secure-boot-reset-keys"
	// CapabilityBootOrder: the calls of bmc.BootOrderManager fail, as on
	// IPMI BMCs and Redfish systems without BootOptions.
	CapabilityBootOrder Capability = "boot-order"
)

// Capabilities lists every Capability, in a stable order.
func Capabilities() []Capability {
	return []Capability{
		CapabilityBootOverride, CapabilityBootOverrideReadBack, CapabilityBootMode, CapabilityBootHTTP,
		CapabilityVirtualMediaCD, CapabilityVirtualMediaUSB, CapabilityBMCReset,
		CapabilityBMCResetWarm, CapabilityBMCResetCold,
		CapabilityPowerSoftOff, CapabilityPowerCycle, CapabilityPowerReset, CapabilityLastResetTime, CapabilityFirmwareUpdate,
		CapabilityInventory,
		CapabilityBIOS,
		CapabilityHealth, CapabilityEventLogs, CapabilityEventLogClear,
		CapabilityLocatorLED, CapabilityLocatorLEDBlink, CapabilityLocatorLEDReadBack, CapabilityNMI,
		CapabilityAccounts,
		CapabilitySecureBoot, CapabilitySecureBootResetKeys, CapabilityBootOrder,
	}
}

// Valid reports whether c is one of the defined capabilities.
func (c Capability) Valid() bool {
	for _, k := range Capabilities() {
		if c == k {
			return true
		}
	}
	return false
}
