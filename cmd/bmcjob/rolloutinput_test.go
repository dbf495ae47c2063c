package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// FuzzRolloutServers: the -servers decoder never panics; what it accepts
// has a name and a BMC per server, unique names, and reads back the same
// when written as JSON lines.
func FuzzRolloutServers(f *testing.F) {
	f.Add([]byte(`{"name": "a", "bmc": "redfish://10.0.0.1/redfish/v1/Systems/1", "labels": {"rack": "r1"}}` + "\n" + `{"name": "b", "bmc": "ipmi://10.0.0.2", "credentialsRef": "x", "systemUUID": "u"}`))
	f.Add([]byte(`[{"name": "a", "bmc": "redfish://h"}, {"name": "b", "bmc": "redfish://h2"}]`))
	f.Add([]byte("# c\n\n{\"name\": \"a\"}"))
	f.Add([]byte(`[{"name": "a", "bmc": "redfish://h"},`))
	f.Add([]byte(`{"name": "a", "bmc": "redfish://h", "labels": {"": "x"}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		servers, err := decodeServers(data)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("an empty error")
			}
			return
		}
		seen := map[string]bool{}
		var lines []string
		for _, s := range servers {
			if s.Name == "" || s.BMC == "" || s.where == "" || seen[s.Name] {
				t.Fatalf("accepted %+v", s)
			}
			seen[s.Name] = true
			b, err := json.Marshal(s.Server)
			if err != nil {
				t.Fatal(err)
			}
			lines = append(lines, string(b))
		}
		again, err := decodeServers([]byte(strings.Join(lines, "\n")))
		if err != nil || len(again) != len(servers) {
			t.Fatalf("written back as JSON lines: %v (%d of %d)", err, len(again), len(servers))
		}
		for i := range again {
			a, _ := json.Marshal(again[i].Server)
			if string(a) != lines[i] {
				t.Fatalf("server %d: %s, then %s", i, lines[i], a)
			}
		}
	})
}
