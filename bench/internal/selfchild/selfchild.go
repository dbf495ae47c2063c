// Package selfchild runs a benchmark program's own executable as a child
// process (its simulators), so that the parent's rusage counts the client
// alone. The child talks to the parent over its standard input and output
// and ends when its standard input closes.
package selfchild

import (
	"io"
	"os"
	"os/exec"
)

// Proc is a running child.
type Proc struct {
	Cmd    *exec.Cmd
	Stdin  io.WriteCloser
	Stdout io.ReadCloser
}

// Start runs this executable with args, the parent's environment plus env,
// and the parent's standard error.
func Start(env []string, args ...string) (*Proc, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return &Proc{Cmd: cmd, Stdin: in, Stdout: out}, nil
}

// Stop closes the child's standard input and waits for it to end.
func (p *Proc) Stop() error {
	_ = p.Stdin.Close()
	return p.Cmd.Wait()
}
