package job_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bmckit/bmckit/job"
	"github.com/bmckit/bmckit/task"
)

const specUUID = "4c4c4544-0047-3510-8052-b4c04f564433"

func specPower(op task.PowerOp) task.Spec { return task.Spec{Power: &task.PowerAction{Op: op}} }

func validJobSpec() job.Spec {
	return job.Spec{
		BMC:            "redfish://10.0.0.5/redfish/v1/Systems/1",
		CredentialsRef: "lab",
		SystemUUID:     specUUID,
		Tasks: []task.Spec{
			specPower(task.PowerOff),
			{BootDevice: &task.BootDeviceAction{Device: task.BootPXE, Mode: task.BootModeUEFI}},
			specPower(task.PowerOn),
			{WaitForBoot: &task.WaitForBootAction{}, Timeout: task.Duration{Duration: 20 * time.Minute}},
		},
		Timeout: task.Duration{Duration: time.Hour},
	}
}

func TestSpecValidateAccepts(t *testing.T) {
	s := validJobSpec()
	require.NoError(t, s.Validate())

	// The task may name its own system instead of the job.
	s.SystemUUID = ""
	s.Tasks[3].WaitForBoot.SystemUUID = specUUID
	require.NoError(t, s.Validate())

	// No wait-for-boot: no system UUID needed.
	require.NoError(t, (&job.Spec{BMC: "ipmi://10.0.0.6", Tasks: []task.Spec{specPower(task.PowerCycle)}}).Validate())

	// 100 tasks is the limit.
	many := job.Spec{BMC: "ipmi://h"}
	for range 100 {
		many.Tasks = append(many.Tasks, specPower(task.PowerOn))
	}
	require.NoError(t, many.Validate())
}

func TestSpecValidateNamesTheField(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*job.Spec)
		want   []string
	}{
		{"empty bmc", func(s *job.Spec) { s.BMC = "" }, []string{"bmc: ", "empty"}},
		{"bad bmc scheme", func(s *job.Spec) { s.BMC = "idrac://10.0.0.5" }, []string{"bmc: ", `unsupported scheme "idrac"`}},
		{"bmc with password", func(s *job.Spec) { s.BMC = "redfish://admin:hunter2@10.0.0.5" }, []string{"bmc: ", "credentials"}},
		{"no tasks", func(s *job.Spec) { s.Tasks = nil }, []string{"tasks: at least one task is required"}},
		{"too many tasks", func(s *job.Spec) {
			s.Tasks = nil
			for range 101 {
				s.Tasks = append(s.Tasks, specPower(task.PowerOn))
			}
		}, []string{"tasks: 101 tasks, at most 100"}},
		{"negative job timeout", func(s *job.Spec) { s.Timeout.Duration = -time.Minute }, []string{"timeout: -1m0s is negative"}},
		{"bad power op", func(s *job.Spec) { s.Tasks[2].Power.Op = "of" }, []string{`tasks[2].power.op: "of" is not one of`}},
		{"bad boot mode", func(s *job.Spec) { s.Tasks[1].BootDevice.Mode = "efi" }, []string{`tasks[1].bootDevice.mode: "efi"`}},
		{"task timeout", func(s *job.Spec) { s.Tasks[0].Timeout.Duration = -time.Second }, []string{"tasks[0].timeout: -1s is negative"}},
		{"no action", func(s *job.Spec) { s.Tasks[1] = task.Spec{} }, []string{"tasks[1]: no action set"}},
		{"two actions", func(s *job.Spec) { s.Tasks[0].BootDevice = &task.BootDeviceAction{Device: task.BootPXE} }, []string{"tasks[0]: bootDevice and power are all set"}},
		{"image URL credentials", func(s *job.Spec) {
			s.Tasks[0] = task.Spec{VirtualMedia: &task.VirtualMediaAction{ImageURL: "http://u:hunter2@h/x.iso"}}
		}, []string{"tasks[0].virtualMedia.imageURL: credentials"}},
		{"wait-for-boot without any UUID", func(s *job.Spec) { s.SystemUUID = "" }, []string{"tasks[3].waitForBoot.systemUUID: empty, and the job has no systemUUID"}},
		{"wait-for-boot bad task UUID", func(s *job.Spec) { s.Tasks[3].WaitForBoot.SystemUUID = "nope" }, []string{`tasks[3].waitForBoot.systemUUID: "nope" is not a UUID`}},
		{"bad job UUID", func(s *job.Spec) { s.SystemUUID = "nope" }, []string{`systemUUID: "nope" is not a UUID`}},
		{"bad job UUID without wait task", func(s *job.Spec) { s.Tasks = s.Tasks[:1]; s.SystemUUID = strings.Repeat("x", 100) }, []string{"systemUUID: ", "..."}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := validJobSpec()
			tt.mutate(&s)
			err := s.Validate()
			require.Error(t, err)
			assert.ErrorIs(t, err, job.ErrInvalidSpec)
			assert.True(t, strings.HasPrefix(err.Error(), job.ErrInvalidSpec.Error()+": "), err.Error())
			for _, w := range tt.want {
				assert.Contains(t, err.Error(), w)
			}
			assert.NotContains(t, err.Error(), "hunter2")
			assert.NotContains(t, err.Error(), "invalid task:", "task's prefix must be stripped")
		})
	}
}

func TestDecodeSpec(t *testing.T) {
	in := `{
		"bmc": "ipmi://10.0.0.6",
		"credentialsRef": "lab",
		"systemUUID": "` + specUUID + `",
		"tasks": [
			{"power": {"op": "off"}},
			{"bootDevice": {"device": "pxe", "persistent": false, "mode": "legacy"}, "timeout": "30s"},
			{"power": {"op": "on"}},
			{"waitForBoot": {}, "timeout": 600}
		],
		"timeout": "1h"
	}`
	s, err := job.DecodeSpec([]byte(in))
	require.NoError(t, err)
	assert.Equal(t, job.Spec{
		BMC:            "ipmi://10.0.0.6",
		CredentialsRef: "lab",
		SystemUUID:     specUUID,
		Tasks: []task.Spec{
			specPower(task.PowerOff),
			{BootDevice: &task.BootDeviceAction{Device: task.BootPXE, Mode: task.BootModeLegacy}, Timeout: task.Duration{Duration: 30 * time.Second}},
			specPower(task.PowerOn),
			{WaitForBoot: &task.WaitForBootAction{}, Timeout: task.Duration{Duration: 10 * time.Minute}},
		},
		Timeout: task.Duration{Duration: time.Hour},
	}, s)

	// Round trip.
	b, err := json.Marshal(s)
	require.NoError(t, err)
	back, err := job.DecodeSpec(b)
	require.NoError(t, err)
	assert.Equal(t, s, back)
}

func TestDecodeSpecIsStrict(t *testing.T) {
	ok := `{"bmc":"ipmi://h","tasks":[{"power":{"op":"on"}}]}`
	tests := []struct{ name, in, want string }{
		{"unknown field", `{"bmc":"ipmi://h","password":"x","tasks":[{"power":{"op":"on"}}]}`, `unknown field "password"`},
		{"unknown task field", `{"bmc":"ipmi://h","tasks":[{"power":{"op":"on"},"retry":true}]}`, `unknown field "retry"`},
		{"trailing object", ok + `{}`, "trailing data"},
		{"trailing brace", ok + `}`, "trailing data"},
		{"trailing bracket", ok + `]`, "trailing data"},
		{"trailing word", ok + ` nope`, "trailing data"},
		{"not JSON", `bmc: ipmi://h`, "decoding JSON"},
		{"wrong type", `{"bmc":5,"tasks":[]}`, "decoding JSON"},
		{"empty", ``, "decoding JSON"},
		{"invalid after decoding", `{"bmc":"ipmi://h","tasks":[{"power":{"op":"on"}},{"power":{}}]}`, `tasks[1].power.op: ""`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := job.DecodeSpec([]byte(tt.in))
			require.Error(t, err)
			assert.ErrorIs(t, err, job.ErrInvalidSpec)
			assert.Contains(t, err.Error(), tt.want)
			assert.Equal(t, job.Spec{}, s)
		})
	}
	_, err := job.DecodeSpec([]byte(ok + "\n"))
	assert.NoError(t, err)
}
