package redfishtest

import (
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
)

// The system's hardware inventory: Processors, Memory, Storage (one
// subsystem with a controller and its drives) and EthernetInterfaces, as
// DMTF's schemas shape them, sized by Config.Hardware. Every system has its
// own serial numbers and MAC addresses (derived from its number), so a fleet
// inventory can tell them apart. With Config.ExpandQuery the service root
// advertises $expand (ProtocolFeaturesSupported.ExpandQuery) and a collection
// GET with $expand carries its members inline.

// Hardware sizes the simulated systems' inventory.
type Hardware struct {
	// Processors is the number of CPU sockets. Defaults to 2.
	Processors int
	// MemoryModules is the number of DIMMs. Defaults to 4.
	MemoryModules int
	// Drives is the number of drives under the one storage controller.
	// Defaults to 2.
	Drives int
	// EthernetInterfaces is the number of NICs. Defaults to 2.
	EthernetInterfaces int
	// None serves no inventory at all: the system links none of the
	// collections (a BMC with only power control). Defaults to false.
	None bool

	// Accelerators is the number of GPUs listed among the system's
	// Processors after the CPUs (GPU1, GPU2, ...: ProcessorType GPU, AMD
	// Instinct, as on an HPE Cray EX235a). Defaults to 0.
	Accelerators int
	// CPU is what each CPU reports, as the BMC words it (a vendor's space
	// padding included). Zero fields take the defaults: Intel(R)
	// Corporation, Intel(R) Xeon(R) Gold 6430, 32 cores, 64 threads,
	// 3400 MHz.
	CPU ProcessorInfo
	// MACAddresses are the MACAddress values the Ethernet interfaces
	// report, in order; interfaces past the list report [SystemMAC]. A
	// value that is no MAC ("Not Available", as on most HPE Cray EX
	// nodes) or the all-zero MAC models a BMC that does not know it: that
	// interface reports no PermanentMACAddress either. Defaults to none.
	MACAddresses []string
	// StaleMembers are members that their collection lists but that answer
	// 404 (a hot-removed disk, a stale link), as paths below the system:
	// "Storage/1/Drives/Disk2", "Processors/CPU2", "Memory/DIMM3",
	// "EthernetInterfaces/NIC1", "Storage/1". With $expand they are listed
	// as links only. Defaults to none.
	StaleMembers []string
	// InvalidMembers are members (paths as for StaleMembers) that answer
	// 200 with a document that does not fit their schema: its Id is a
	// number, as a buggy firmware sends it (inline the same with $expand).
	// Defaults to none.
	InvalidMembers []string
}

// ProcessorInfo is what a simulated CPU reports (Hardware.CPU).
type ProcessorInfo struct {
	Manufacturer, Model         string
	Cores, Threads, MaxSpeedMHz int
}

func (h Hardware) withDefaults() Hardware {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&h.Processors, 2)
	def(&h.MemoryModules, 4)
	def(&h.Drives, 2)
	def(&h.EthernetInterfaces, 2)
	def(&h.CPU.Cores, 32)
	def(&h.CPU.Threads, 64)
	def(&h.CPU.MaxSpeedMHz, 3400)
	if h.CPU.Manufacturer == "" {
		h.CPU.Manufacturer = "Intel(R) Corporation"
	}
	if h.CPU.Model == "" {
		h.CPU.Model = "Intel(R) Xeon(R) Gold 6430"
	}
	return h
}

// memberFault reports whether the system's member at path (below the
// system, e.g. "Storage/1/Drives/Disk2") is one of Hardware.StaleMembers
// or Hardware.InvalidMembers.
func (h Hardware) memberFault(path string) (stale, invalid bool) {
	return containsID(h.StaleMembers, path), containsID(h.InvalidMembers, path)
}

// invalidDoc is what an InvalidMembers member answers.
func invalidDoc(uri string) map[string]any {
	return map[string]any{"@odata.id": uri, "Id": 7, "Name": "invalid member"}
}

// SystemMAC is the MAC address of the n-th (1-based) Ethernet interface of
// the i-th (1-based) simulated system, in the form the simulator reports
// it (upper case, colons).
func SystemMAC(i, n int) string {
	return fmt.Sprintf("0C:C4:7A:%02X:%02X:%02X", (i>>8)&0xff, i&0xff, n&0xff)
}

// SystemSerial is the SerialNumber of the i-th (1-based) simulated system.
func SystemSerial(i int) string { return fmt.Sprintf("RT%06d", i) }

func (s *Server) inventoryRoutes(handle func(method, path string, h http.HandlerFunc)) {
	sysURI := root + "/Systems/{id}"
	handle("GET", sysURI+"/Processors", s.auth(s.listMembers("Processors", "ProcessorCollection", "Processors Collection", s.processorIDs, s.processorDoc)))
	handle("GET", sysURI+"/Processors/{member}", s.auth(s.getMember(s.processorIDs, s.processorDoc)))
	handle("GET", sysURI+"/Memory", s.auth(s.listMembers("Memory", "MemoryCollection", "Memory Collection", s.memoryIDs, s.memoryDoc)))
	handle("GET", sysURI+"/Memory/{member}", s.auth(s.getMember(s.memoryIDs, s.memoryDoc)))
	handle("GET", sysURI+"/Storage", s.auth(s.listMembers("Storage", "StorageCollection", "Storage Collection", s.storageIDs, s.storageDoc)))
	handle("GET", sysURI+"/Storage/{member}", s.auth(s.getMember(s.storageIDs, s.storageDoc)))
	handle("GET", sysURI+"/Storage/1/Drives/{drive}", s.auth(s.getDrive))
	handle("GET", sysURI+"/EthernetInterfaces", s.auth(s.listMembers("EthernetInterfaces", "EthernetInterfaceCollection", "Ethernet Interface Collection", s.nicIDs, s.nicDoc)))
	handle("GET", sysURI+"/EthernetInterfaces/{member}", s.auth(s.getMember(s.nicIDs, s.nicDoc)))
}

// inventoryLinks adds the system's identity and the inventory collections
// to a system document.
func (s *Server) inventoryLinks(doc map[string]any, uri string) {
	n, _ := strconv.Atoi(doc["Id"].(string))
	doc["Manufacturer"], doc["Model"], doc["SKU"] = "bmckit", "redfishtest", "RT-1"
	doc["SerialNumber"], doc["BiosVersion"] = SystemSerial(n), "1.0.0"
	if s.cfg.Hardware.None {
		return
	}
	for _, c := range []string{"Processors", "Memory", "Storage", "EthernetInterfaces"} {
		doc[c] = link(uri + "/" + c)
	}
}

// expandFeatures adds ProtocolFeaturesSupported to the service root when
// Config.ExpandQuery is set.
func (s *Server) expandFeatures(doc map[string]any) {
	if !s.cfg.ExpandQuery {
		return
	}
	doc["ProtocolFeaturesSupported"] = map[string]any{
		"ExpandQuery": map[string]any{"ExpandAll": true, "Levels": true, "Links": true, "NoLinks": true, "MaxLevels": 1},
	}
}

func seq(prefix string, n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = prefix + strconv.Itoa(i+1)
	}
	return ids
}

func (s *Server) processorIDs() []string {
	return append(seq("CPU", s.cfg.Hardware.Processors), seq("GPU", s.cfg.Hardware.Accelerators)...)
}
func (s *Server) memoryIDs() []string  { return seq("DIMM", s.cfg.Hardware.MemoryModules) }
func (s *Server) storageIDs() []string { return []string{"1"} }
func (s *Server) nicIDs() []string     { return seq("NIC", s.cfg.Hardware.EthernetInterfaces) }

// sysNum is the system's number (its ID is "1", "2", ...).
func sysNum(sys *system) int { n, _ := strconv.Atoi(sys.id); return n }

func (s *Server) processorDoc(sys *system, id string) map[string]any {
	if n, ok := strings.CutPrefix(id, "GPU"); ok {
		return map[string]any{
			"@odata.type": "#Processor.v1_18_0.Processor", "Id": id, "Name": "GPU " + n,
			"ProcessorType": "GPU", "Manufacturer": "AMD", "Model": "AMD Instinct MI200",
			"SerialNumber": fmt.Sprintf("G%04d%s", sysNum(sys), n),
			"Status":       map[string]string{"State": "Enabled", "Health": "OK"},
		}
	}
	cpu := s.cfg.Hardware.CPU
	return map[string]any{
		"@odata.type": "#Processor.v1_18_0.Processor", "Id": id, "Name": "Processor " + id,
		"ProcessorType": "CPU", "ProcessorArchitecture": "x86", "InstructionSet": "x86-64",
		"Manufacturer": cpu.Manufacturer, "Model": cpu.Model,
		"MaxSpeedMHz": cpu.MaxSpeedMHz, "TotalCores": cpu.Cores, "TotalThreads": cpu.Threads,
		"Status": map[string]string{"State": "Enabled", "Health": "OK"},
	}
}

func (s *Server) memoryDoc(sys *system, id string) map[string]any {
	return map[string]any{
		"@odata.type": "#Memory.v1_17_0.Memory", "Id": id, "Name": "DIMM " + id,
		"MemoryDeviceType": "DDR5", "CapacityMiB": 32768, "OperatingSpeedMhz": 4800,
		"Manufacturer": "Samsung", "PartNumber": "M321R4GA3BB6-CQK",
		"SerialNumber": fmt.Sprintf("S%04d%s", sysNum(sys), id),
		"Status":       map[string]string{"State": "Enabled", "Health": "OK"},
	}
}

func (s *Server) storageDoc(sys *system, id string) map[string]any {
	uri := root + "/Systems/" + sys.id + "/Storage/" + id
	var drives []any
	for _, d := range seq("Disk", s.cfg.Hardware.Drives) {
		drives = append(drives, link(uri+"/Drives/"+d))
	}
	return map[string]any{
		"@odata.type": "#Storage.v1_15_0.Storage", "Id": id, "Name": "Storage " + id,
		"Drives": drives, "Drives@odata.count": len(drives),
		"StorageControllers": []any{map[string]any{
			"@odata.id": uri + "#/StorageControllers/0", "MemberId": "0", "Name": "RAID controller",
			"Manufacturer": "Broadcom", "Model": "MegaRAID 9560-8i", "FirmwareVersion": "52.24.0-4763",
		}},
		"Status": map[string]string{"State": "Enabled", "Health": "OK"},
	}
}

func (s *Server) nicDoc(sys *system, id string) map[string]any {
	n, _ := strconv.Atoi(strings.TrimPrefix(id, "NIC"))
	link := "LinkUp"
	if n > 1 {
		link = "LinkDown"
	}
	doc := map[string]any{
		"@odata.type": "#EthernetInterface.v1_12_0.EthernetInterface", "Id": id, "Name": "Ethernet " + id,
		"MACAddress": SystemMAC(sysNum(sys), n), "PermanentMACAddress": SystemMAC(sysNum(sys), n),
		"SpeedMbps": 25000, "LinkStatus": link, "InterfaceEnabled": true,
		"Status": map[string]string{"State": "Enabled", "Health": "OK"},
	}
	if macs := s.cfg.Hardware.MACAddresses; n >= 1 && n <= len(macs) {
		doc["MACAddress"] = macs[n-1]
		doc["PermanentMACAddress"] = macs[n-1]
		if _, err := net.ParseMAC(macs[n-1]); err != nil || strings.Trim(macs[n-1], "0:-.") == "" {
			delete(doc, "PermanentMACAddress")
		}
	}
	return doc
}

func (s *Server) getDrive(w http.ResponseWriter, r *http.Request) {
	sys := s.inventorySystem(w, r)
	if sys == nil {
		return
	}
	id := r.PathValue("drive")
	stale, invalid := s.cfg.Hardware.memberFault("Storage/1/Drives/" + id)
	if stale || !containsID(seq("Disk", s.cfg.Hardware.Drives), id) {
		redfishError(w, http.StatusNotFound, "Base.1.8.ResourceMissingAtURI", "no drive "+id)
		return
	}
	if invalid {
		writeJSON(w, http.StatusOK, "", invalidDoc(r.URL.Path))
		return
	}
	n, _ := strconv.Atoi(strings.TrimPrefix(id, "Disk"))
	writeJSON(w, http.StatusOK, "", map[string]any{
		"@odata.id": r.URL.Path, "@odata.type": "#Drive.v1_17_0.Drive", "Id": id, "Name": "Disk " + strconv.Itoa(n),
		"Manufacturer": "Micron", "Model": "MTFDKCC960TFR", "SerialNumber": fmt.Sprintf("D%04d%02d", sysNum(sys), n),
		"MediaType": "SSD", "Protocol": "NVMe", "CapacityBytes": int64(960197124096),
		"Status": map[string]string{"State": "Enabled", "Health": "OK"},
	})
}

func containsID(ids []string, id string) bool {
	for _, v := range ids {
		if v == id {
			return true
		}
	}
	return false
}

// inventorySystem looks the request's system up; with Hardware.None it
// answers 404 like a BMC without the resource.
func (s *Server) inventorySystem(w http.ResponseWriter, r *http.Request) *system {
	s.mu.Lock()
	sys := s.lookup(w, r)
	s.mu.Unlock()
	if sys != nil && s.cfg.Hardware.None {
		redfishError(w, http.StatusNotFound, "Base.1.8.ResourceMissingAtURI", "no resource at "+r.URL.Path)
		return nil
	}
	return sys
}

// listMembers answers a collection of the system's; with $expand (and
// Config.ExpandQuery) the members come inline.
func (s *Server) listMembers(sub, typ, name string, ids func() []string, doc func(*system, string) map[string]any) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		sys := s.inventorySystem(w, r)
		if sys == nil {
			return
		}
		uri := root + "/Systems/" + sys.id + "/" + sub
		expand := s.cfg.ExpandQuery && r.URL.Query().Has("$expand")
		var members []any
		for _, id := range ids() {
			stale, invalid := s.cfg.Hardware.memberFault(sub + "/" + id)
			switch {
			case expand && invalid:
				members = append(members, invalidDoc(uri+"/"+id))
			case expand && !stale:
				d := doc(sys, id)
				d["@odata.id"] = uri + "/" + id
				members = append(members, d)
			default:
				members = append(members, link(uri+"/"+id))
			}
		}
		writeCollection(w, uri, typ, name, members)
	}
}

func (s *Server) getMember(ids func() []string, doc func(*system, string) map[string]any) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		sys := s.inventorySystem(w, r)
		if sys == nil {
			return
		}
		id := r.PathValue("member")
		stale, invalid := s.cfg.Hardware.memberFault(strings.TrimPrefix(r.URL.Path, root+"/Systems/"+sys.id+"/"))
		if stale || !containsID(ids(), id) {
			redfishError(w, http.StatusNotFound, "Base.1.8.ResourceMissingAtURI", "no resource at "+r.URL.Path)
			return
		}
		if invalid {
			writeJSON(w, http.StatusOK, "", invalidDoc(r.URL.Path))
			return
		}
		d := doc(sys, id)
		d["@odata.id"] = r.URL.Path
		writeJSON(w, http.StatusOK, "", d)
	}
}
