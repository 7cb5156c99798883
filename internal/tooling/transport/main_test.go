package transport

import (
	"bufio"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

// envServer names the mode in which this test binary runs as a stdio
// server (see serverMain) instead of running the tests.
const envServer = "TRANSPORT_TEST_SERVER"

func TestMain(m *testing.M) {
	if mode := os.Getenv(envServer); mode != "" {
		os.Exit(serverMain(mode))
	}
	goleak.VerifyTestMain(m)
}

// serverMain is a stdio server for the Command tests:
//
//   - "echo": writes a line that is not JSON-RPC, then each line of stdin
//     back to stdout; exits at the end of stdin;
//   - "exit": writes "fatal: boom" to stderr and exits 3;
//   - "stubborn": ignores SIGTERM and the end of stdin, and hangs.
func serverMain(mode string) int {
	switch mode {
	case "echo":
		in := bufio.NewScanner(os.Stdin)
		for in.Scan() {
			fmt.Fprintf(os.Stdout, "garbage before %d bytes\n%s\n", len(in.Bytes()), in.Bytes())
		}
		return 0
	case "exit":
		fmt.Fprintln(os.Stderr, "fatal: boom")
		return 3
	case "stubborn":
		signal.Ignore(syscall.SIGTERM)
		fmt.Fprintln(os.Stdout, `{"jsonrpc":"2.0","method":"ready"}`)
		time.Sleep(time.Hour) // the hang is the point: Close must kill it
		return 0
	}
	fmt.Fprintf(os.Stderr, "unknown mode %q\n", mode)
	return 2
}

// observerLogger is a logger whose entries the test reads.
func observerLogger() (*zap.Logger, *observer.ObservedLogs) {
	core, logs := observer.New(zap.DebugLevel)
	return zap.New(core), logs
}
