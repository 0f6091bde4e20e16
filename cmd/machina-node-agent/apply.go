package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/machina-io/machina/cmd/machina-node-agent/internal/durable"
	"github.com/machina-io/machina/cmd/machina-node-agent/internal/hostexec"
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
	// host starts the command: inside root with --chroot.
	host hostexec.Runner
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
	root, err := durable.OpenRoot(a.root)
	if err != nil {
		return failure("opening the root %s: %v", a.root, err)
	}
	defer func() { _ = root.Close() }()
	if err := copyTree(ctx, src, root); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return failure("copying %s into %s: %v", src, a.root, err)
	}
	return a.runCommand(ctx, target)
}

// copyTree copies the directories, regular files and symbolic links under
// src into root, each file written atomically with its mode. Files under
// root that src does not have are left alone: a target adds and replaces
// files, it does not own the root. Directories that exist are kept as they
// are; missing ones are created with src's mode. Paths resolve inside the
// root as the node sees them (durable.Root): a link on the node, even an
// absolute one, never carries a write out of it.
func copyTree(ctx context.Context, src string, root *durable.Root) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		to := path.Join("/", filepath.ToSlash(rel))
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch mode := info.Mode(); {
		case to == "/":
			return nil
		case mode.IsDir():
			return ensureDir(root, to, mode.Perm())
		case mode.IsRegular():
			return copyFile(p, root, to, mode&(fs.ModePerm|fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky))
		case mode&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return root.Symlink(to, target)
		default:
			return fmt.Errorf("%s: unsupported file type %s", rel, mode.Type())
		}
	})
}

// ensureDir creates node path dir with perm unless it is a directory (or a
// link to one inside the root).
func ensureDir(root *durable.Root, dir string, perm os.FileMode) error {
	resolved, err := root.Resolve(dir)
	if err != nil {
		return err
	}
	info, err := root.Lstat(resolved)
	switch {
	case err == nil && info.IsDir():
		return nil
	case err == nil:
		return fmt.Errorf("%s exists and is not a directory", dir)
	case !errors.Is(err, fs.ErrNotExist):
		return err
	}
	return root.Mkdir(resolved, perm, -1, -1)
}

func copyFile(from string, root *durable.Root, to string, perm os.FileMode) error {
	if info, err := root.Lstat(to); err == nil && info.IsDir() {
		return fmt.Errorf("%s exists and is a directory", to)
	}
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer func() { _ = in.Close() }()
	_, err = root.Replace(to, in, perm, -1, -1)
	return err
}

// cleanTemps removes the temporary files a copy of target cut short (the
// agent killed in the middle) left in the root: in every directory of the
// target's source tree.
func (a *applier) cleanTemps(target string) ([]string, error) {
	if validTarget(target) != "" {
		return nil, nil
	}
	root, err := durable.OpenRoot(a.root)
	if err != nil {
		return nil, err
	}
	defer func() { _ = root.Close() }()
	src := filepath.Join(a.sourceDir, target)
	var removed []string
	err = filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		gone, err := root.CleanTemps(path.Join("/", filepath.ToSlash(rel)))
		removed = append(removed, gone...)
		return err
	})
	if errors.Is(err, fs.ErrNotExist) {
		err = nil
	}
	return removed, err
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
	seen := a.host.SeenRoot(a.root)
	env := append(append([]string{}, a.env...), "MACHINA_INPLACE_TARGET="+target, "MACHINA_INPLACE_ROOT="+seen)
	cmd := a.host.Command(runCtx, env, "/bin/sh", "-c", a.command)
	cmd.Dir = seen
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
