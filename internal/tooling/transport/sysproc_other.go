//go:build !linux

package transport

import "syscall"

// ServerProcAttr puts a stdio server in its own process group; only Linux
// also kills it when toolhostd dies.
func ServerProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
