package ipmitest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmc/ipmi"
)

// OpenIPMIOptions configure [StartOpenIPMI]. The zero value is ready to use.
type OpenIPMIOptions struct {
	// Username and Password of the administrator account. Default to
	// "admin" and "tK4v9" (short, so that a test can append to it and stay
	// within IPMI's 20-byte password limit).
	Username, Password string
	// PoweredOn is the initial power state. Defaults to off.
	PoweredOn bool
	// FRU is the data of FRU device 0 (mc_add_fru_data), e.g. from
	// [EncodeFRU]. Defaults to none.
	FRU []byte
	// Sensors are the BMC's sensors: their SDRs in the main SDR
	// repository (main_sdr_add), the sensors with their thresholds and
	// readings (sensor_add, sensor_set_threshold, sensor_set_value).
	// Discrete sensors' Raw sets their state bits. Defaults to none.
	Sensors []Sensor
}

// OpenIPMI is a running OpenIPMI ipmi_sim process serving IPMI v2.0
// lanplus on a UDP port on 127.0.0.1: a real, independently written BMC
// implementation (Debian package openipmi). A chassis-control script keeps
// the power state and boot device in files, so power and boot requests
// change state as on a server.
//
// What ipmi_sim does (and drivers must cope with): it supports cipher
// suite 3 but not 17 and ignores the cipher-suite query; a power cycle turns
// the server off and back on about a second later; Get System Boot Options
// reports only the device selector (not the valid, persistent or EFI bits);
// the BMC's own Cold/Warm Reset commands are refused as invalid; Chassis
// Identify reaches the script (see [OpenIPMI.ChassisIdentify]) but Get
// Chassis Status never reports the identify state, and Chassis Control
// "pulse diagnostic interrupt" is refused (CCh). Its SEL
// (1000 records) stamps records with its own clock, which counts seconds
// since the host booted (before the epoch's 20000000h: "Pre-Init" times)
// until a client sets the SEL time; it clears at once, adding no record.
type OpenIPMI struct {
	// Endpoint is ipmi://127.0.0.1:PORT.
	Endpoint bmc.Endpoint
	// Credentials log in as the administrator.
	Credentials bmc.Credentials

	dir  string
	cmd  *exec.Cmd
	done chan struct{}
	once sync.Once
}

// DialOptions are the [ipmi.Options] matching ipmi_sim: cipher suite 3 (it
// ignores the suite query and lacks 17) and no boot flag read-back.
func (s *OpenIPMI) DialOptions() ipmi.Options {
	return ipmi.Options{CipherSuites: []int{3}, NoBootReadBack: true}
}

// StartOpenIPMI starts ipmi_sim on a free UDP port on 127.0.0.1 for the
// test and kills it when the test ends. Without ipmi_sim on PATH the test
// skips, or fails when the environment variable CI is "true".
func StartOpenIPMI(t testing.TB, opts OpenIPMIOptions) *OpenIPMI {
	t.Helper()
	bin := RequireProgram(t, "ipmi_sim", "openipmi")
	var errs []error
	// The port is picked by binding :0 and releasing it, so another
	// process may take it before ipmi_sim binds; retry with a new port.
	for attempt := 0; attempt < 5; attempt++ {
		s, err := startOpenIPMI(t.Context(), bin, t.TempDir(), opts)
		if err == nil {
			t.Cleanup(func() { _ = s.Close() })
			return s
		}
		errs = append(errs, err)
	}
	t.Fatalf("ipmitest: start ipmi_sim: %v", errors.Join(errs...))
	return nil
}

// chassisScript is ipmi_sim's chassis_control program. ipmi_sim runs it as
// "<script> bmc get power|boot ..." and "<script> bmc set <param> <value>
// ...", reading "param:value" lines back from get.
const chassisScript = `#!/bin/sh
dir=$(dirname "$0")
shift
op=$1
shift
case $op in
get)
  for p in "$@"; do
    case $p in
      power) echo "power:$(cat "$dir/power")";;
      boot) echo "boot:$(cat "$dir/boot")";;
      *) echo "unknown parameter $p"; exit 1;;
    esac
  done;;
set)
  while [ $# -ge 2 ]; do
    case $1 in
      power) echo "$2" > "$dir/power";;
      shutdown) echo 0 > "$dir/power";;
      boot) echo "$2" > "$dir/boot";;
      identify) shift; echo "$@" > "$dir/identify"; break;; # one argument, "<interval> <force>"
      reset|diag) ;;
      *) echo "unknown parameter $1"; exit 1;;
    esac
    shift 2
  done;;
check) ;;
*) echo "unknown operation $op"; exit 1;;
esac
`

func startOpenIPMI(ctx context.Context, bin, dir string, opts OpenIPMIOptions) (*OpenIPMI, error) {
	user, pass := opts.Username, opts.Password
	if user == "" {
		user = "admin"
	}
	if pass == "" {
		pass = DefaultPassword
	}
	for name, v := range map[string]string{"user name": user, "password": pass} {
		if strings.ContainsAny(v, "\"\n\\ ") || len(v) > 16 {
			return nil, fmt.Errorf("%s %q cannot be written to ipmi_sim's lan.conf: at most 16 characters, no quotes, spaces or backslashes", name, redact(name, v))
		}
	}
	if err := validateSensors(opts.Sensors); err != nil {
		return nil, fmt.Errorf("OpenIPMIOptions.Sensors: %w", err)
	}
	port, err := freeUDPPort()
	if err != nil {
		return nil, err
	}
	power := "0"
	if opts.PoweredOn {
		power = "1"
	}
	script := filepath.Join(dir, "chassis.sh")
	files := map[string]string{
		script:                      chassisScript,
		filepath.Join(dir, "power"): power + "\n",
		filepath.Join(dir, "boot"):  "default\n",
		filepath.Join(dir, "emu.cmds"): "mc_setbmc 0x20\nmc_add 0x20 0 no-device-sdrs 0x23 9 8 0x9f 0x1291 0xf02 persist_sdr\n" +
			// A SEL of 1000 records, with Delete SEL Entry and Reserve SEL (flags 0Ah, as Get SEL Info reports them).
			"sel_enable 0x20 1000 0x0a\n" + fruCommand(opts.FRU) + sensorCommands(opts.Sensors) + "mc_enable 0x20\n",
		filepath.Join(dir, "lan.conf"): fmt.Sprintf(`name "bmckit"
set_working_mc 0x20
  startlan 1
    addr 127.0.0.1 %d
    priv_limit admin
    allowed_auths_callback none md2 md5 straight
    allowed_auths_user none md2 md5 straight
    allowed_auths_operator none md2 md5 straight
    allowed_auths_admin none md2 md5 straight
    guid a123456789abcdefa123456789abcdef
  endlan
  chassis_control "%s bmc"
user 2 true "%s" "%s" admin 10 none md2 md5 straight
`, port, script, user, pass),
	}
	for p, content := range files {
		mode := os.FileMode(0o600)
		if p == script {
			mode = 0o700
		}
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			return nil, fmt.Errorf("write %s: %w", p, err)
		}
	}
	state := filepath.Join(dir, "state")
	if err := os.MkdirAll(state, 0o700); err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "-c", filepath.Join(dir, "lan.conf"), "-f", filepath.Join(dir, "emu.cmds"), "-s", state, "-n")
	out := &strings.Builder{}
	cmd.Stdout, cmd.Stderr = &lockedWriter{w: out}, &lockedWriter{w: out}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("run %s: %w", bin, err)
	}
	s := &OpenIPMI{
		Endpoint:    bmc.Endpoint{Protocol: "ipmi", Host: "127.0.0.1", Port: port},
		Credentials: bmc.Credentials{Username: user, Password: pass},
		dir:         dir,
		cmd:         cmd,
		done:        make(chan struct{}),
	}
	go func() {
		_ = cmd.Wait()
		close(s.done)
	}()
	if err := s.waitReady(ctx); err != nil {
		_ = s.Close()
		return nil, fmt.Errorf("ipmi_sim on port %d: %w (output: %q)", port, err, out.String())
	}
	return s, nil
}

// waitReady polls until ipmi_sim opens a session, it exits, or 15s pass.
func (s *OpenIPMI) waitReady(ctx context.Context) error {
	d, err := ipmi.NewDialer(ipmi.Options{CipherSuites: []int{3}, Timeout: 200 * time.Millisecond, Retries: -1})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		drv, err := d.Open(ctx, s.Endpoint, s.Credentials)
		if err == nil {
			return drv.Close(ctx)
		}
		if errors.Is(err, bmc.ErrUnauthorized) {
			return err
		}
		select {
		case <-s.done:
			return fmt.Errorf("ipmi_sim exited: %s", s.cmd.ProcessState)
		case <-ctx.Done():
			return fmt.Errorf("not answering: %w", err)
		case <-tick.C:
		}
	}
}

// PoweredOn reads the power state the chassis-control script keeps.
func (s *OpenIPMI) PoweredOn() (bool, error) {
	b, err := os.ReadFile(filepath.Join(s.dir, "power"))
	if err != nil {
		return false, err
	}
	return strings.TrimSpace(string(b)) == "1", nil
}

// BootDevice reads the boot device the chassis-control script keeps, in
// ipmi_sim's words: none, pxe, default (disk), cdrom or bios.
func (s *OpenIPMI) BootDevice() (string, error) {
	b, err := os.ReadFile(filepath.Join(s.dir, "boot"))
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}

// ChassisIdentify reads the last Chassis Identify ipmi_sim handed the
// chassis-control script ("set identify <interval> <force>"): ok false
// when none came. ipmi_sim does not report the identify state in Get
// Chassis Status, so this is the only place it shows.
func (s *OpenIPMI) ChassisIdentify() (interval int, force, ok bool, err error) {
	b, err := os.ReadFile(filepath.Join(s.dir, "identify"))
	if errors.Is(err, os.ErrNotExist) {
		return 0, false, false, nil
	}
	if err != nil {
		return 0, false, false, err
	}
	var f int
	if _, err := fmt.Sscan(string(b), &interval, &f); err != nil {
		return 0, false, false, fmt.Errorf("ipmitest: the chassis script recorded identify %q: %w", strings.TrimSpace(string(b)), err)
	}
	return interval, f != 0, true, nil
}

// Close kills ipmi_sim and waits for it to exit. Idempotent.
func (s *OpenIPMI) Close() error {
	s.once.Do(func() {
		_ = s.cmd.Process.Kill()
		<-s.done
	})
	return nil
}

func freeUDPPort() (int, error) {
	c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return 0, fmt.Errorf("find a free UDP port: %w", err)
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).Port, nil
}

func redact(name, v string) string {
	if name == "password" {
		return "<redacted>"
	}
	return v
}

// lockedWriter serializes writes from the process's stdout and stderr.
type lockedWriter struct {
	mu sync.Mutex
	w  *strings.Builder
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
