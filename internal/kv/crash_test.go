package kv_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolhostd/toolhostd/internal/kv"
	"github.com/toolhostd/toolhostd/internal/testenv"
)

// crashEnv names the bbolt file the crash test's subprocess writes.
const crashEnv = "TOOLHOSTD_KV_CRASH_DB"

// crashValue is the value of write i: 2 KiB (more than a page) whose
// every byte depends on i, so that a torn value shows.
func crashValue(i int) []byte {
	return bytes.Repeat([]byte(fmt.Sprintf("%08d", i)), 256)
}

// crashWriter is the subprocess: it writes k<i> and "last" in a loop,
// printing "ack i" once both writes returned, until it is killed.
func crashWriter() {
	st, err := kv.OpenBolt(os.Getenv(crashEnv), kv.BoltOptions{})
	if err != nil {
		fmt.Println("open:", err)
		os.Exit(1)
	}
	b, err := kv.New(st, kv.Options{}).Open("writer", "", kv.Policy{}, "default")
	if err != nil {
		fmt.Println("open:", err)
		os.Exit(1)
	}
	ctx := context.Background()
	for i := 0; ; i++ {
		if err := b.Set(ctx, fmt.Sprintf("k%06d", i), crashValue(i)); err != nil {
			fmt.Println("set:", err)
			os.Exit(1)
		}
		if err := b.Set(ctx, "last", crashValue(i)); err != nil {
			fmt.Println("set:", err)
			os.Exit(1)
		}
		fmt.Println("ack", i)
	}
}

// TestCrash: a writer killed with SIGKILL mid-writes loses none of the
// writes it saw acknowledged, and leaves no torn value.
func TestCrash(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kv.db")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashEnv+"="+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	acks := make(chan int, 1024)
	go func() {
		defer close(acks)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			n, err := strconv.Atoi(strings.TrimPrefix(sc.Text(), "ack "))
			if err != nil {
				t.Errorf("writer: %s", sc.Text())
				return
			}
			acks <- n
		}
	}()
	last := -1
	for last < 100 {
		last = testenv.Recv(t, acks, 60*time.Second, "an acknowledged write")
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for n := range acks { // acknowledged before the kill landed
		last = n
	}
	_ = cmd.Wait()

	st, err := kv.OpenBolt(path, kv.BoltOptions{})
	if err != nil {
		t.Fatalf("reopening after SIGKILL: %v", err)
	}
	defer st.Close()
	c := ctx(t)
	ref := kv.Ref{Agent: "writer", Bucket: "default"}
	for i := 0; i <= last; i++ {
		v, ok, err := st.Get(c, ref, fmt.Sprintf("k%06d", i))
		if err != nil || !ok || !bytes.Equal(v, crashValue(i)) {
			t.Fatalf("acknowledged write %d after SIGKILL: present %v, intact %v, %v", i, ok, bytes.Equal(v, crashValue(i)), err)
		}
	}
	v, _, err := st.Get(c, ref, "last")
	if err != nil {
		t.Fatal(err)
	}
	n, _ := strconv.Atoi(string(v[:8]))
	if n < last || n > last+1 || !bytes.Equal(v, crashValue(n)) {
		t.Errorf("last = write %d (intact %v); last acknowledged %d", n, bytes.Equal(v, crashValue(n)), last)
	}
	t.Logf("%d writes acknowledged before SIGKILL, all present", last+1)
}
