package trace

// launcherOnly is why a sentence of the Launcher checks has no mutant of
// the in-process reference driver.
const launcherOnly = "checked only by launching the driver (launcher mode); its mutants are processes, see TestLauncherMode in cmd/machina-conformance"

// NoMutant are the sentences a check exercises that no driver can break on
// purpose, and why.
var NoMutant = map[string]string{
	"R-2.2-path-most-107-bytes": "no driver can listen on a longer path (bind refuses it); the check reports an endpoint no driver could serve",
	// Only the Launcher checks exercise these; their mutants are driver
	// processes (drivers/inmemory/testdata/brokendriver), caught in
	// cmd/machina-conformance's TestLauncherMode where one exists.
	"R-2.1-accept-flag-environment":           launcherOnly,
	"R-2.1-refuse-start-message-naming":       launcherOnly,
	"R-2.2-report-message-naming-path":        launcherOnly,
	"R-2.2-not-create-other-files":            launcherOnly,
	"R-2.3-listen-tcp-only-operator":          launcherOnly,
	"R-2.2-socket-file-exists-path":           launcherOnly,
	"R-2.2-process-still-accepts-connections": launcherOnly,
	"R-2.2-anything-else-exists-path":         launcherOnly,
	"R-2.2-parent-directory-not-exist":        launcherOnly,
	"R-2.2-not-change-mode-owner":             launcherOnly,
	"R-2.2-exit-remove-socket-file":           launcherOnly,
	"R-2.7-finish-within-pod-termination":     launcherOnly,
	"R-2.7-keep-idempotency-contract":         launcherOnly,
}
