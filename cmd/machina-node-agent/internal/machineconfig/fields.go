package machineconfig

// Field is one field of a MachineConfig as the node agent treats it: applied
// (How says how) or refused (How says why, and where: at render time, the
// pool's RenderDegraded; on the node, its Degraded or Unreconcilable state
// with a reason that names the field). Test names the test that proves it.
// docs/machine-config.md's field table is generated from Fields, and a
// test fails when a field of the API types has no row.
type Field struct {
	Path    string
	Applied bool
	How     string
	Test    string
}

// Tests that prove the rows.
const (
	testApply     = "TestMachineConfigApplyActivateRestore"
	testRefusals  = "TestMachineConfigRefusals"
	testOS        = "TestMachineConfigOSUpdateCommand"
	testIgnition  = "TestParseIgnitionRefusals"
	testParse     = "TestParseIgnition"
	testUnits     = "TestUnitWrites"
	testVerifies  = "TestFileVerification"
	testFiles     = "TestFileWrites"
	testRetry     = "TestMachineConfigRetry"
	testEscape    = "TestMachineConfigMissingOrEscaping"
	refusedRender = "refused by ParseIgnition: the pool is RenderDegraded naming the fragment and the field, and a node given such a rendered configuration is Unreconcilable"
)

// Fields lists every field of MachineConfigSpec and of the Ignition config
// in spec.config.
var Fields = []Field{
	{"spec.osImageURL", true, "run through --os-update-command ($MACHINA_OS_IMAGE_URL), then a reboot; without the command the node is Degraded naming the field", testRefusals + ", " + testOS},
	{"spec.baseOSExtensionsContainerImage", true, "run through --os-update-command ($MACHINA_BASE_OS_EXTENSIONS_IMAGE), then a reboot; without the command the node is Degraded naming the field", testRefusals + ", " + testOS},
	{"spec.kernelArguments", true, "appended to the options line of every boot loader entry in /boot/loader/entries, computed from the image's entry so that removal restores it; a reboot; a node without entries is Degraded", testApply},
	{"spec.extensions", true, "run through --os-update-command ($MACHINA_EXTENSIONS), then a reboot; without the command the node is Degraded naming the field; unknown extensions are refused at render", testRefusals + ", " + testOS},
	{"spec.fips", false, "FIPS mode is chosen at installation: a value that differs from the node's (/proc/sys/crypto/fips_enabled) makes the node Unreconcilable; a day-2 change is refused at render", testRefusals},
	{"spec.kernelType", true, "run through --os-update-command ($MACHINA_KERNEL_TYPE), then a reboot; without the command the node is Degraded naming the field; 64k-pages off arm64 is refused at render", testRefusals + ", " + testOS},
	{"spec.config.ignition.version", true, "3.0.0 to 3.5.0 accepted; 2.0.0 to 2.2.0 translated to 3.5.0 as MCO does (the networkd section, other file systems than root, append and users' create refused naming the field); anything else refused", testIgnition},
	{"spec.config.ignition.config", false, "read by Ignition at first boot only; " + refusedRender, testIgnition},
	{"spec.config.ignition.timeouts", false, "read by Ignition at first boot only; " + refusedRender, testIgnition},
	{"spec.config.ignition.security", false, "read by Ignition at first boot only; " + refusedRender, testIgnition},
	{"spec.config.ignition.proxy", false, "read by Ignition at first boot only; " + refusedRender, testIgnition},
	{"spec.config.kernelArguments", false, "Ignition's own section; MCO refuses it too, spec.kernelArguments is the way; " + refusedRender, testIgnition},
	{"spec.config.passwd.users[].name", true, "only core; another user is " + refusedRender, testRefusals},
	{"spec.config.passwd.users[].sshAuthorizedKeys", true, "written to ~core/.ssh/authorized_keys.d/ignition, mode 0600, owned by core (home, uid and gid from the node's /etc/passwd); no reboot (MCO's sshkey policy: None)", testApply},
	{"spec.config.passwd.users[].passwordHash", false, "of core only the SSH keys are applied; " + refusedRender, testRefusals},
	{"spec.config.passwd.users[].uid", false, "of core only the SSH keys are applied; " + refusedRender, testIgnition},
	{"spec.config.passwd.users[].gecos", false, "of core only the SSH keys are applied; " + refusedRender, testIgnition},
	{"spec.config.passwd.users[].homeDir", false, "of core only the SSH keys are applied; " + refusedRender, testIgnition},
	{"spec.config.passwd.users[].noCreateHome", false, "of core only the SSH keys are applied; " + refusedRender, testIgnition},
	{"spec.config.passwd.users[].primaryGroup", false, "of core only the SSH keys are applied; " + refusedRender, testIgnition},
	{"spec.config.passwd.users[].groups", false, "of core only the SSH keys are applied; " + refusedRender, testIgnition},
	{"spec.config.passwd.users[].noUserGroup", false, "of core only the SSH keys are applied; " + refusedRender, testIgnition},
	{"spec.config.passwd.users[].noLogInit", false, "of core only the SSH keys are applied; " + refusedRender, testIgnition},
	{"spec.config.passwd.users[].shell", false, "of core only the SSH keys are applied; " + refusedRender, testIgnition},
	{"spec.config.passwd.users[].shouldExist", false, "of core only the SSH keys are applied; " + refusedRender, testIgnition},
	{"spec.config.passwd.users[].system", false, "of core only the SSH keys are applied; " + refusedRender, testIgnition},
	{"spec.config.passwd.groups", false, "groups are not managed; " + refusedRender, testIgnition},
	{"spec.config.storage.files[].path", true, "written under the node's root; symbolic links on the way resolve inside the root; a path with .. is refused", testApply + ", " + testEscape},
	{"spec.config.storage.files[].mode", true, "set with chmod (setuid, setgid and sticky included); 0644 when unset", testApply},
	{"spec.config.storage.files[].overwrite", true, "false with another file already on the node makes the node Degraded; rendered configurations set true where unset", testFiles},
	{"spec.config.storage.files[].contents.source", true, "data: URLs decoded; any other scheme is " + refusedRender, testApply},
	{"spec.config.storage.files[].contents.compression", true, "gzip decompressed", testParse},
	{"spec.config.storage.files[].contents.verification.hash", true, "sha256 or sha512 of the decoded data checked; a mismatch is " + refusedRender, testVerifies},
	{"spec.config.storage.files[].contents.httpHeaders", false, "only data: URLs are read; " + refusedRender, testIgnition},
	{"spec.config.storage.files[].user.id", true, "the file's owner (chown before the rename)", testFiles},
	{"spec.config.storage.files[].user.name", true, "looked up in the node's /etc/passwd; unknown: the node is Degraded naming the field", testApply + ", " + testRefusals},
	{"spec.config.storage.files[].group.id", true, "the file's group", testFiles},
	{"spec.config.storage.files[].group.name", true, "looked up in the node's /etc/group", testApply},
	{"spec.config.storage.files[].append", false, "files are replaced, never appended to (MCO refuses append too); " + refusedRender, testIgnition},
	{"spec.config.storage.directories", false, "only files and units are written (MCO refuses them too); " + refusedRender, testIgnition},
	{"spec.config.storage.links", false, "only files and units are written (MCO refuses them too); " + refusedRender, testIgnition},
	{"spec.config.storage.disks", false, "cannot change on a running node; " + refusedRender, testRefusals},
	{"spec.config.storage.raid", false, "cannot change on a running node; " + refusedRender, testIgnition},
	{"spec.config.storage.filesystems", false, "cannot change on a running node; " + refusedRender, testIgnition},
	{"spec.config.storage.luks", false, "cannot change on a running node; " + refusedRender, testIgnition},
	{"spec.config.systemd.units[].name", true, "the unit's file name in /etc/systemd/system", testApply},
	{"spec.config.systemd.units[].contents", true, "written to /etc/systemd/system/<name>; a change is followed by a daemon-reload (and the policy's action: a reboot by default)", testApply},
	{"spec.config.systemd.units[].enabled", true, "true: the links of the unit's [Install] WantedBy=, RequiredBy=, Alias= (the configuration's file, else the image's); false: every enablement link removed; unset again: the node's preset decides, as systemctl preset does", testApply + ", " + testUnits},
	{"spec.config.systemd.units[].mask", true, "/etc/systemd/system/<name> linked to /dev/null; contents are not written for a masked unit", testUnits},
	{"spec.config.systemd.units[].dropins[].name", true, "/etc/systemd/system/<unit>.d/<name>", testApply},
	{"spec.config.systemd.units[].dropins[].contents", true, "the drop-in's content (empty when unset)", testApply},
}
