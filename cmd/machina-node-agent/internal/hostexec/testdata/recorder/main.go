// Command recorder stands in for a host program inside a test's root: it
// appends its arguments, working directory and SYSTEMD_IGNORE_CHROOT to
// /calls, an absolute path, so the line lands in the root only when it ran
// inside it.
package main

import (
	"fmt"
	"os"
	"strings"
)

func main() {
	wd, _ := os.Getwd()
	f, err := os.OpenFile("/calls", os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	defer f.Close()
	fmt.Fprintf(f, "%s wd=%s ignore-chroot=%s extra=%s\n",
		strings.Join(os.Args[1:], " "), wd, os.Getenv("SYSTEMD_IGNORE_CHROOT"), os.Getenv("EXTRA"))
	if len(os.Args) > 1 && os.Args[1] == "fail" {
		fmt.Println("first line\nunit fail.service not found")
		os.Exit(1)
	}
}
