package lab

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// process is one child of the lab (etcd, kube-apiserver) in a process group
// of its own, so that stopping it also stops anything it spawned and a Ctrl-C
// sent to the terminal's foreground group is handled by the lab, in order.
type process struct {
	name string
	cmd  *exec.Cmd
	log  *os.File

	done     chan struct{}
	waitErr  error
	stopOnce sync.Once
}

func startProcess(name, logPath string, bin string, args ...string) (*process, error) {
	return startProcessIn(processEnv{}, name, logPath, bin, args...)
}

// processEnv is where a child runs: its working directory (empty: the
// lab's) and variables added to the lab's environment.
type processEnv struct {
	dir string
	env []string
}

func startProcessIn(pe processEnv, name, logPath string, bin string, args ...string) (*process, error) {
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = pe.dir
	if len(pe.env) > 0 {
		cmd.Env = append(os.Environ(), pe.env...)
	}
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Setpgid: true,
		// If the test binary dies without running its cleanups (a panic in
		// another goroutine, go test's own timeout), the children go too.
		Pdeathsig: syscall.SIGKILL,
	}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, log: logFile, done: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		logFile.Close()
		close(p.done)
	}()
	return p, nil
}

// exited reports whether the process has ended, and how.
func (p *process) exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.waitErr
	default:
		return false, nil
	}
}

// stop asks the process group to terminate, and kills it if it has not
// after grace.
func (p *process) stop(grace time.Duration) {
	p.stopOnce.Do(func() {
		pgid := p.cmd.Process.Pid
		_ = syscall.Kill(-pgid, syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(grace):
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			<-p.done
		}
	})
}

// kill ends the process group at once, as a crash would.
func (p *process) kill() {
	p.stopOnce.Do(func() {
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	})
}

// freePorts reserves n distinct loopback ports. They are released before the
// caller binds them, so a start is retried if another process takes one.
func freePorts(n int) ([]int, error) {
	var listeners []net.Listener
	defer func() {
		for _, l := range listeners {
			l.Close()
		}
	}()
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		listeners = append(listeners, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

func loopback(port int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) }

var errExited = errors.New("exited")
