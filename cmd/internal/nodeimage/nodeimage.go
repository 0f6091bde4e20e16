// Package nodeimage makes a node's root directory as an OS image ships it,
// for the node agent's tests, the end-to-end tests and the demo, which run
// machina-node-agent against a directory per node: the accounts (root and
// core), a boot loader entry, image files a MachineConfig may overwrite
// (chrony.conf, kubelet.conf), a vendor unit enabled by the image's preset,
// the kernel's boot ID and FIPS switch. It also writes a recording
// systemctl: the host actions the agent takes (daemon-reload, restart,
// reboot) cannot run here, so the real code path runs against an
// executable that logs what it was asked, and whose reboot gives the node
// a new boot ID, as a real reboot does.
package nodeimage

import (
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// CoreUID is the uid and gid of the image's core user.
const CoreUID = 1000

// Node paths of the image, for the tests' assertions.
const (
	BootEntry     = "/boot/loader/entries/machina-1.conf"
	BootOptions   = "root=LABEL=root rw quiet"
	ChronyConf    = "/etc/chrony.conf"
	ChronyImage   = "pool 2.image.pool.ntp.org iburst\n"
	KubeletConf   = "/etc/kubernetes/kubelet.conf"
	KubeletImage  = "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nclusterDNS: [172.30.0.10]\nstaticPodPath: /etc/kubernetes/manifests\n"
	VendorUnit    = "chronyd.service"
	VendorUnitDir = "/usr/lib/systemd/system"
	WantsDir      = "/etc/systemd/system/multi-user.target.wants"
	BootIDFile    = "/proc/sys/kernel/random/boot_id"
	FIPSFile      = "/proc/sys/crypto/fips_enabled"
)

// Seed writes the image into root (an existing directory).
func Seed(root string) error {
	files := []struct {
		path, contents string
		mode           os.FileMode
	}{
		{"/etc/passwd", "root:x:0:0:root:/root:/bin/bash\ncore:x:1000:1000:CoreOS Admin:/home/core:/bin/bash\n", 0o644},
		{"/etc/group", "root:x:0:\nwheel:x:10:core\ncore:x:1000:\n", 0o644},
		{BootEntry, "title Machina Linux\nversion 6.12.0\nlinux /vmlinuz-6.12.0\ninitrd /initramfs-6.12.0.img\noptions " + BootOptions + "\n", 0o644},
		{ChronyConf, ChronyImage, 0o644},
		{KubeletConf, KubeletImage, 0o644},
		{VendorUnitDir + "/" + VendorUnit, "[Unit]\nDescription=NTP client\n[Service]\nExecStart=/usr/sbin/chronyd -n\n[Install]\nWantedBy=multi-user.target\n", 0o644},
		{"/usr/lib/systemd/system-preset/90-default.preset", "enable chronyd.service\ndisable *\n", 0o644},
		{BootIDFile, newBootID() + "\n", 0o444},
		{FIPSFile, "0\n", 0o444},
	}
	for _, f := range files {
		at := filepath.Join(root, filepath.FromSlash(f.path))
		if err := os.MkdirAll(filepath.Dir(at), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(at, []byte(f.contents), f.mode); err != nil {
			return err
		}
	}
	home := filepath.Join(root, "home", "core")
	if err := os.MkdirAll(home, 0o700); err != nil {
		return err
	}
	if err := os.Chown(home, CoreUID, CoreUID); err != nil {
		return err
	}
	wants := filepath.Join(root, filepath.FromSlash(WantsDir))
	if err := os.MkdirAll(wants, 0o755); err != nil {
		return err
	}
	return os.Symlink(VendorUnitDir+"/"+VendorUnit, filepath.Join(wants, VendorUnit))
}

func newBootID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// Systemctl is a recording systemctl for one node.
type Systemctl struct {
	// Path is the executable (named systemctl, in a directory of its own,
	// to put first on a PATH or to give to --systemctl).
	Path string
	// Log is where each call is appended as a line of its arguments.
	Log string
}

// WriteSystemctl writes a recording systemctl for the node whose root is
// root into dir. A reboot writes a new boot ID under root. A call whose
// first argument names a file under dir called fail-<verb> fails with that
// file's content as its message, to inject a failure.
func WriteSystemctl(dir, root string) (Systemctl, error) {
	s := Systemctl{Path: filepath.Join(dir, "systemctl"), Log: filepath.Join(dir, "systemctl.log")}
	script := fmt.Sprintf(`#!/bin/sh
# A recording systemctl (cmd/internal/nodeimage).
echo "$*" >> %[1]q
if [ -f %[2]q/fail-"$1" ]; then cat %[2]q/fail-"$1" >&2; exit 1; fi
if [ "$1" = reboot ] && [ ! -f %[2]q/hold-reboot ]; then cat /proc/sys/kernel/random/uuid > %[3]q; fi
exit 0
`, s.Log, dir, filepath.Join(root, filepath.FromSlash(BootIDFile)))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return s, err
	}
	if err := os.WriteFile(s.Path, []byte(script), 0o755); err != nil {
		return s, err
	}
	return s, nil
}

// Calls are the calls recorded so far, one string of arguments each.
func (s Systemctl) Calls() ([]string, error) {
	data, err := os.ReadFile(s.Log)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	out := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(out) == 1 && out[0] == "" {
		return nil, nil
	}
	return out, nil
}

// Fail makes the next calls of verb fail with message, until Heal.
func (s Systemctl) Fail(verb, message string) error {
	return os.WriteFile(filepath.Join(filepath.Dir(s.Path), "fail-"+verb), []byte(message+"\n"), 0o644)
}

// HoldReboot makes the next reboots leave the boot ID as it is, as a
// reboot that has not happened yet: Reboot then does it.
func (s Systemctl) HoldReboot() error {
	return os.WriteFile(filepath.Join(filepath.Dir(s.Path), "hold-reboot"), nil, 0o644)
}

// Reboot gives the node of root a new boot ID, as a reboot does.
func Reboot(root string) error {
	return os.WriteFile(filepath.Join(root, filepath.FromSlash(BootIDFile)), []byte(newBootID()+"\n"), 0o444)
}

// Heal undoes Fail.
func (s Systemctl) Heal(verb string) error {
	return os.Remove(filepath.Join(filepath.Dir(s.Path), "fail-"+verb))
}
