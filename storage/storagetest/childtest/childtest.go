//go:build linux

package childtest

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// envRole names the environment variable that tells a re-executed test
// binary which child role to play.
const envRole = "BMCKIT_CHILDTEST_ROLE"

// Role returns the child role this process was started with, or "" in the
// parent.
func Role() string { return os.Getenv(envRole) }

// IsChild reports whether this process is a child started with role.
func IsChild(role string) bool { return Role() == role }

// Child is a running child process.
type Child struct {
	cmd   *exec.Cmd
	lines chan string

	inMu sync.Mutex
	in   io.WriteCloser // the child's stdin
}

// Start runs the test binary again as a child that runs only the test named
// testName (the caller's t.Name() for top-level tests) in role, with extra
// environment entries env ("K=V"). The child dies with the parent
// (PR_SET_PDEATHSIG) and is killed at the end of the test.
func Start(t *testing.T, testName, role string, env ...string) *Child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+testName+"$", "-test.count=1", "-test.v=false")
	cmd.Env = append(append(os.Environ(), envRole+"="+role), env...)
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start child %s: %v", role, err)
	}
	c := &Child{cmd: cmd, lines: make(chan string, 1024), in: in}
	go func() {
		defer close(c.lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			c.lines <- strings.TrimSpace(sc.Text())
		}
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return c
}

// Lines delivers the child's stdout line by line; it is closed when the
// child's stdout closes (the child exited or was killed).
func (c *Child) Lines() <-chan string { return c.lines }

// Send writes line and a newline to the child's stdin, for children that
// take commands there (see [Commands]). A child that never reads its stdin
// is not affected until the pipe's buffer (64 KiB) is full.
func (c *Child) Send(line string) error {
	c.inMu.Lock()
	defer c.inMu.Unlock()
	_, err := io.WriteString(c.in, line+"\n")
	return err
}

// Signal sends sig to the child (SIGSTOP and SIGCONT to pause and continue
// it, SIGUSR1 for a command of its own, ...).
func (c *Child) Signal(sig syscall.Signal) error { return c.cmd.Process.Signal(sig) }

// Pid is the child's process ID.
func (c *Child) Pid() int { return c.cmd.Process.Pid }

// Commands delivers the lines the parent sends with [Child.Send], in a
// child; the channel is closed when stdin ends (the parent closed it or
// died).
func Commands() <-chan string {
	ch := make(chan string, 16)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			ch <- strings.TrimSpace(sc.Text())
		}
	}()
	return ch
}

// Kill sends SIGKILL to the child, waits for it to die and returns the
// lines it wrote that were not read from Lines yet.
func (c *Child) Kill() []string {
	_ = c.cmd.Process.Signal(syscall.SIGKILL)
	rest, _ := c.Wait()
	return rest
}

// Wait waits for the child to exit, draining its remaining output into the
// returned slice, and returns its exit error.
func (c *Child) Wait() ([]string, error) {
	var rest []string
	for l := range c.lines {
		rest = append(rest, l)
	}
	return rest, c.cmd.Wait()
}
