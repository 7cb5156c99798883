//go:build !linux

package tooling

import "syscall"

// serverProcAttr puts a stdio server in its own process group; only Linux
// also kills it when toolhostd dies.
func serverProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
