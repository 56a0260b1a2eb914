package testenv

import (
	"os/exec"
	"syscall"
)

// DieWithParent makes cmd's process get SIGKILL when the test binary that
// starts it dies, cleanups or not (a -timeout panic runs none). A gateway
// left running by a test that timed out once loaded every sale of the next
// run's Redis and signed its draw's round, failing a fresh clone's suite.
// Call it before cmd.Start; it keeps any other SysProcAttr fields set.
func DieWithParent(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}
