package fake

import (
	"fmt"
	"strings"
	"time"
)

// Method names a call a driver makes on the fake, for hooks and the call log.
type Method string

// Methods of the fake. MethodAny matches every method in [BMC.SetHook].
const (
	MethodDial            Method = "Dial"
	MethodClose           Method = "Close"
	MethodPowerState      Method = "PowerState"
	MethodSetPower        Method = "SetPower"
	MethodSetBootOverride Method = "SetBootOverride"
	MethodBootOverride    Method = "BootOverride"
	MethodInsertMedia     Method = "InsertMedia"
	MethodEjectMedia      Method = "EjectMedia"
	MethodMediaStatus     Method = "MediaStatus"
	MethodResetBMC        Method = "ResetBMC"
	MethodOpenSystem      Method = "OpenSystem"
	MethodLastResetTime   Method = "LastResetTime"

	MethodStartFirmwareUpdate  Method = "StartFirmwareUpdate"
	MethodFindFirmwareUpdate   Method = "FindFirmwareUpdate"
	MethodFirmwareUpdateStatus Method = "FirmwareUpdateStatus"
	MethodFirmwareVersion      Method = "FirmwareVersion"
	MethodInventory            Method = "Inventory"
	MethodBIOSSettings         Method = "BIOSSettings"
	MethodBIOSRegistry         Method = "BIOSRegistry"
	MethodSetBIOSAttributes    Method = "SetBIOSAttributes"
	MethodCheckNeed            Method = "CheckNeed"
	MethodHealth               Method = "Health"
	MethodSystemStatus         Method = "SystemStatus"
	MethodLogServices          Method = "LogServices"
	MethodLogEntries           Method = "LogEntries"
	MethodClearLog             Method = "ClearLog"
	MethodEventSubscriptions   Method = "EventSubscriptions"
	MethodSubscribe            Method = "Subscribe"
	MethodUnsubscribe          Method = "Unsubscribe"
	MethodSubmitTestEvent      Method = "SubmitTestEvent"
	MethodLocatorLED           Method = "LocatorLED"
	MethodSetLocatorLED        Method = "SetLocatorLED"
	MethodSendNMI              Method = "SendNMI"
	MethodAny                  Method = "*"
)

func (m Method) valid() bool {
	switch m {
	case MethodDial, MethodClose, MethodPowerState, MethodSetPower, MethodSetBootOverride,
		MethodBootOverride, MethodInsertMedia, MethodEjectMedia, MethodMediaStatus, MethodResetBMC, MethodOpenSystem, MethodLastResetTime, MethodAny,
		MethodStartFirmwareUpdate, MethodFindFirmwareUpdate, MethodFirmwareUpdateStatus, MethodFirmwareVersion,
		MethodInventory, MethodBIOSSettings, MethodBIOSRegistry, MethodSetBIOSAttributes, MethodCheckNeed,
		MethodHealth, MethodSystemStatus, MethodLogServices, MethodLogEntries, MethodClearLog,
		MethodEventSubscriptions, MethodSubscribe, MethodUnsubscribe, MethodSubmitTestEvent,
		MethodLocatorLED, MethodSetLocatorLED, MethodSendNMI,
		MethodSecureBoot, MethodSetSecureBoot, MethodResetSecureBootKeys, MethodBootOrder, MethodSetBootOrder:
		return true
	}
	return accountMethod(m) // accounts.go
}

// Call is one entry of the call log, and what a [Hook] is shown.
type Call struct {
	// Method is the driver method called.
	Method Method
	// Args are the call's arguments after ctx, e.g. a bmc.PowerAction for
	// SetPower, a bmc.BootOverride for SetBootOverride, a bmc.MediaKind and
	// the image URL for InsertMedia. For Dial it is the user name (never the
	// password), for OpenSystem the address opened.
	Args []any
	// Session is the number of the session (1 for the first Dial) the call
	// was made on. Calls of a driver from Driver.OpenSystem carry the number
	// of the session they share, which is counted on the BMC that was
	// dialed.
	Session int
	// Time is when the call arrived, on the BMC's clock.
	Time time.Time
	// Err is the error the call returned (nil on success). Hooks see nil.
	Err error
}

// String renders the call for test failure messages.
func (c Call) String() string {
	args := make([]string, len(c.Args))
	for i, a := range c.Args {
		args[i] = fmt.Sprintf("%v", a)
	}
	s := fmt.Sprintf("#%d %s(%s)", c.Session, c.Method, strings.Join(args, ", "))
	if c.Err != nil {
		s += ": " + c.Err.Error()
	}
	return s
}
