// Package nodesetup finds the node binary that runs the Node.js driver and
// installs the driver's packages, for the driver's own tests and for the
// conformance soak of cmd/machina-conformance, which run it as a process.
package nodesetup

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// minNodeMajor is the oldest Node.js the driver runs on (package.json's
// engines).
const minNodeMajor = 20

// npmCI installs the packages of package-lock.json into node_modules/,
// exactly as locked, without running their install scripts.
var npmCI = []string{"ci", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error"}

// installStamp, in node_modules/, holds the SHA-256 of the package-lock.json
// that the tests' npm ci installed.
const installStamp = ".machina-npm-ci"

// Node finds node (MACHINA_NODE, else node on PATH), checks its
// version and runs npm ci in dir unless node_modules/ holds what the
// current package-lock.json locks.
func Node(dir string) (string, error) {
	bin := os.Getenv("MACHINA_NODE")
	if bin == "" {
		var err error
		if bin, err = exec.LookPath("node"); err != nil {
			return "", fmt.Errorf("node (v%d or later) is not on PATH: install Node.js and npm (Debian: apt-get install -y nodejs npm), or set MACHINA_NODE to a node binary", minNodeMajor)
		}
	}
	out, err := exec.Command(bin, "--version").Output()
	if err != nil {
		return "", fmt.Errorf("%s --version: %v", bin, err)
	}
	version := strings.TrimSpace(string(out))
	m := regexp.MustCompile(`^v(\d+)\.`).FindStringSubmatch(version)
	if m == nil {
		return "", fmt.Errorf("%s --version printed %q, not a Node.js version", bin, version)
	}
	if major, _ := strconv.Atoi(m[1]); major < minNodeMajor {
		return "", fmt.Errorf("%s is Node.js %s; the driver needs v%d or later", bin, version, minNodeMajor)
	}
	return bin, installModules(dir, bin)
}

// installModules runs npm ci in dir unless node_modules/ was installed from
// the current package-lock.json. A file lock keeps concurrent test
// processes (go test of several packages, two runs at once) from installing
// over each other.
func installModules(dir, nodeBin string) error {
	lockfile, err := os.ReadFile(filepath.Join(dir, "package-lock.json"))
	if err != nil {
		return err
	}
	sum := sha256.Sum256(lockfile)
	want := hex.EncodeToString(sum[:])
	stamp := filepath.Join(dir, "node_modules", installStamp)

	dirSum := sha256.Sum256([]byte(dir))
	lockPath := filepath.Join(os.TempDir(), "machina-node-inmemory-"+hex.EncodeToString(dirSum[:8])+".lock")
	lock, err := os.OpenFile(lockPath, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("locking %s: %w", lockPath, err)
	}
	defer func() { _ = syscall.Flock(int(lock.Fd()), syscall.LOCK_UN) }()

	if got, err := os.ReadFile(stamp); err == nil && strings.TrimSpace(string(got)) == want {
		return nil
	}
	// npm is installed next to node; PATH is the fallback.
	npm := filepath.Join(filepath.Dir(nodeBin), "npm")
	if _, err := os.Stat(npm); err != nil {
		if npm, err = exec.LookPath("npm"); err != nil {
			return fmt.Errorf("npm is not next to %s nor on PATH: install npm (Debian: apt-get install -y npm) to install the driver's packages", nodeBin)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, npm, npmCI...)
	cmd.Dir = dir
	// npm runs node through its #! line: put the node in use first on PATH.
	cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(nodeBin)+string(os.PathListSeparator)+os.Getenv("PATH"))
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("npm %s in %s: %v\n%s", strings.Join(npmCI, " "), dir, err, out)
	}
	return os.WriteFile(stamp, []byte(want+"\n"), 0o644)
}
