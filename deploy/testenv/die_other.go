//go:build !linux

package testenv

import "os/exec"

// DieWithParent does nothing here: only Linux kills a child with its parent.
func DieWithParent(*exec.Cmd) {}
