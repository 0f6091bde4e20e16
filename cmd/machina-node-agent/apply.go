package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/machina-io/machina/cmd/machina-node-agent/internal/durable"
)

// maxReasonLength bounds the failure reason the agent reports: an
// annotation value, read by people and shown in the Machine's status.
const maxReasonLength = 512

// applier applies a target to the node: the files of the target's source
// directory copied into the root, then the apply command.
type applier struct {
	root, sourceDir string
	// command is run with /bin/sh -c after the files are in place; empty
	// for none.
	command string
	timeout time.Duration
	// env is added to the command's environment.
	env []string
}

// updateError is a failed update: its reason is what the agent reports on
// the Node.
type updateError struct{ reason string }

func (e *updateError) Error() string { return e.reason }

func failure(format string, args ...any) error {
	reason := fmt.Sprintf(format, args...)
	if len(reason) > maxReasonLength {
		reason = reason[:maxReasonLength-3] + "..."
	}
	return &updateError{reason: reason}
}

// validTarget reports why target cannot name a directory under the source
// directory, or "" when it can. The value comes from an annotation that
// anyone who may patch the Node can write: it must not reach out of the
// source directory.
func validTarget(target string) string {
	switch {
	case target == "", target == ".", target == "..":
		return "is not a directory name"
	case strings.ContainsAny(target, "/\\\x00"):
		return "contains a path separator"
	case len(target) > 253:
		return "is longer than 253 characters"
	}
	return ""
}

// apply copies <sourceDir>/<target>/ into the root and runs the command.
// An *updateError is a failure to report; any other error (the context was
// cancelled: the agent is stopping) is not, the next start resumes.
func (a *applier) apply(ctx context.Context, target string) error {
	if why := validTarget(target); why != "" {
		return failure("target %q %s", target, why)
	}
	src := filepath.Join(a.sourceDir, target)
	info, err := os.Stat(src)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return failure("no source for target %s: directory %s does not exist", target, src)
	case err != nil:
		return failure("reading the source of target %s: %v", target, err)
	case !info.IsDir():
		return failure("the source of target %s, %s, is not a directory", target, src)
	}
	if err := copyTree(ctx, src, a.root); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return failure("copying %s into %s: %v", src, a.root, err)
	}
	return a.runCommand(ctx, target)
}

// copyTree copies the directories, regular files and symbolic links under
// src into dst, each file written atomically with its mode. Files under dst
// that src does not have are left alone: a target adds and replaces files,
// it does not own the root. Directories that exist are kept as they are;
// missing ones are created with src's mode.
func copyTree(ctx context.Context, src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch mode := info.Mode(); {
		case mode.IsDir():
			return ensureDir(to, mode.Perm())
		case mode.IsRegular():
			return copyFile(path, to, mode&(fs.ModePerm|fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky))
		case mode&fs.ModeSymlink != 0:
			target, err := os.Readlink(path)
			if err != nil {
				return err
			}
			return durable.Symlink(to, target)
		default:
			return fmt.Errorf("%s: unsupported file type %s", rel, mode.Type())
		}
	})
}

// ensureDir creates dir with perm unless it exists as a directory.
func ensureDir(dir string, perm os.FileMode) error {
	info, err := os.Lstat(dir)
	switch {
	case err == nil && info.IsDir():
		return nil
	case err == nil:
		return fmt.Errorf("%s exists and is not a directory", dir)
	case !errors.Is(err, fs.ErrNotExist):
		return err
	}
	if err := os.Mkdir(dir, perm); err != nil {
		return err
	}
	return os.Chmod(dir, perm) // Mkdir's mode is subject to the umask
}

func copyFile(from, to string, perm os.FileMode) error {
	if info, err := os.Lstat(to); err == nil && info.IsDir() {
		return fmt.Errorf("%s exists and is a directory", to)
	}
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer func() { _ = in.Close() }()
	return durable.Replace(to, in, perm)
}

// runCommand runs the apply command, if any, with the target in its
// environment. A non-zero exit or a timeout is a failure whose reason ends
// with the last line of the command's output.
func (a *applier) runCommand(ctx context.Context, target string) error {
	if a.command == "" {
		return nil
	}
	runCtx, cancel := context.WithTimeout(ctx, a.timeout)
	defer cancel()
	cmd := exec.CommandContext(runCtx, "/bin/sh", "-c", a.command)
	cmd.Dir = a.root
	cmd.Env = append(os.Environ(), a.env...)
	cmd.Env = append(cmd.Env, "MACHINA_INPLACE_TARGET="+target, "MACHINA_INPLACE_ROOT="+a.root)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	// A stopped agent (or the timeout) stops the command and what it
	// started, and kills it if it has not ended a few seconds later.
	ownProcessGroup(cmd)
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return ctx.Err()
	case runCtx.Err() != nil:
		return failure("apply command timed out after %s%s", a.timeout, lastLine(out.Bytes()))
	default:
		return failure("apply command failed (%v)%s", err, lastLine(out.Bytes()))
	}
}

// lastLine returns ": " and the last non-empty line of out, or "" for no
// output.
func lastLine(out []byte) string {
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	last := strings.TrimSpace(lines[len(lines)-1])
	if last == "" {
		return ""
	}
	return ": " + last
}
