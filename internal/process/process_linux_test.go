package process

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// pidOf reads the number after prefix in the log of p.
func pidOf(t *testing.T, p *Process, prefix string) int {
	t.Helper()
	log := waitLog(t, p, prefix+" ")
	for _, line := range strings.Split(log, "\n") {
		if rest, ok := strings.CutPrefix(line, prefix+" "); ok {
			pid, err := strconv.Atoi(rest)
			if err != nil {
				t.Fatal(err)
			}
			return pid
		}
	}
	t.Fatalf("no %q line in the log of %s:\n%s", prefix, p.Name(), log)
	return 0
}

// dead reports whether pid has ended: gone, or a zombie that whoever
// inherited it has not reaped yet.
func dead(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	// The state follows the command name in parentheses.
	s := string(data)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(fields) > 0 && (fields[0] == "Z" || fields[0] == "X")
}

// waitDead waits until pid has ended.
func waitDead(t *testing.T, pid int, what string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !dead(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("%s (pid %d) still runs after 20s", what, pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestKillWithGroupKillsTheChildrenToo(t *testing.T) {
	p := start(t, "grandchild", Config{Group: true})
	grandchild := pidOf(t, p, "grandchild")
	if dead(grandchild) {
		t.Fatalf("grandchild %d not running before the kill", grandchild)
	}
	p.Kill()
	if p.Running() {
		t.Fatal("running after Kill")
	}
	waitDead(t, grandchild, "the grandchild")
}

func TestKillWithoutGroupKillsOnlyTheProcess(t *testing.T) {
	p := start(t, "grandchild", Config{})
	grandchild := pidOf(t, p, "grandchild")
	t.Cleanup(func() { _ = syscall.Kill(grandchild, syscall.SIGKILL) })
	waitLog(t, p, "waiting for SIGTERM")
	p.Kill()
	// The grandchild was not signalled: it still answers a SIGTERM sent
	// after the kill (a SIGKILL sent with the kill would have ended it
	// before it could).
	if err := syscall.Kill(grandchild, syscall.SIGTERM); err != nil {
		t.Fatalf("grandchild %d: %v", grandchild, err)
	}
	waitLog(t, p, "got SIGTERM")
}

func TestChildDiesWithItsParent(t *testing.T) {
	childLog := filepath.Join(t.TempDir(), "child.log")
	parent := start(t, "parent", Config{}, "CHILD_LOG="+childLog)
	child := pidOf(t, parent, "child")
	if dead(child) {
		t.Fatalf("child %d not running before its parent's death", child)
	}
	// SIGKILL: the parent runs no cleanup, only the kernel's parent-death
	// signal can end the child.
	parent.Kill()
	waitDead(t, child, "the child of a killed parent")
}
