//go:build !unix

package hostexec

import (
	"errors"
	"os/exec"
)

func chroot(*exec.Cmd, string) error {
	return errors.New("--chroot needs chroot(2), which this system does not have")
}
