package transport

import "syscall"

// ServerProcAttr puts a stdio server in its own process group (so that
// killing the group kills what it spawned) and has the kernel SIGKILL it
// when toolhostd dies, even by SIGKILL: a server that ignores stdin EOF and
// SIGTERM does not outlive us. (The parent-death signal is tied to the
// thread that started the server; the Go runtime does not end threads
// except ones locked by a goroutine that exits still locked, which this
// program does not do.)
func ServerProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
