package job

import (
	"encoding/json"
	"testing"
)

// codecFixture is a finished three-task netboot job as the Runner stores
// it: conditions, times and wire stats on the job and on every task. It
// is built from JSON so that the benchmark does not depend on how the Go
// types spell their time fields.
const codecFixture = `{"name":"netboot-1","generation":1,"createdAt":"2026-12-01T05:00:00.123456789Z",
"spec":{"bmc":"redfish://10.0.0.5/redfish/v1/Systems/1","credentialsRef":"bmc-1","systemUUID":"4c4c4544-0042-3510-8052-b4c04f565432",
"tasks":[{"power":{"op":"off"}},{"bootDevice":{"device":"pxe","mode":"uefi"}},{"power":{"op":"on"},"timeout":"5m0s"}],"timeout":"30m0s"},
"status":{"observedGeneration":1,
"conditions":[{"type":"Completed","status":"True","observedGeneration":1,"lastTransitionTime":"2026-12-01T05:00:09Z","reason":"Succeeded","message":"3 tasks done"},
{"type":"Running","status":"False","observedGeneration":1,"lastTransitionTime":"2026-12-01T05:00:09Z","reason":"Succeeded","message":"3 tasks done"}],
"result":"Succeeded","reason":"Succeeded","message":"3 tasks done","currentTask":3,
"tasks":[` + codecTaskStatus + `,` + codecTaskStatus + `,` + codecTaskStatus + `],
"startTime":"2026-12-01T05:00:01.5Z","completionTime":"2026-12-01T05:00:09.25Z",
"wire":{"requests":42,"connections":1,"logins":1,"throttled":2,"throttleWait":150000000}}}`

const codecTaskStatus = `{"conditions":[{"type":"Completed","status":"True","observedGeneration":1,"lastTransitionTime":"2026-12-01T05:00:03Z","reason":"Succeeded","message":"power is Off"},
{"type":"Running","status":"False","observedGeneration":1,"lastTransitionTime":"2026-12-01T05:00:03Z","reason":"Succeeded","message":"power is Off"}],
"phase":"Done","result":"Succeeded","reason":"Succeeded","message":"power is Off","attempts":1,
"startTime":"2026-12-01T05:00:01.5Z","requestTime":"2026-12-01T05:00:01.75Z","completionTime":"2026-12-01T05:00:03.125Z"}`

func codecFixtureJob(b *testing.B) *Job {
	var j Job
	if err := json.Unmarshal([]byte(codecFixture), &j); err != nil {
		b.Fatal(err)
	}
	return &j
}

// BenchmarkCodecMarshal encodes the fixture job as the Runner does on every
// write (go test -run '^$' -bench Codec ./job).
func BenchmarkCodecMarshal(b *testing.B) {
	j := codecFixtureJob(b)
	b.ReportAllocs()
	for b.Loop() {
		if err := encodePooled(j, func([]byte) error { return nil }); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCodecUnmarshal decodes the fixture job as the Runner does on
// every read.
func BenchmarkCodecUnmarshal(b *testing.B) {
	data, err := marshalRecord(codecFixtureJob(b))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		var j Job
		if err := unmarshalRecord(data, &j); err != nil {
			b.Fatal(err)
		}
	}
}
