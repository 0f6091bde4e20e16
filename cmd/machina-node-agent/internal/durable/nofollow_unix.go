//go:build unix

package durable

import "syscall"

// noFollow makes an open fail on a link rather than follow it.
const noFollow = syscall.O_NOFOLLOW
