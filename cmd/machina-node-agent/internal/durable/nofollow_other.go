//go:build !unix

package durable

// noFollow: no such flag here; os.Root still keeps the open inside the
// root.
const noFollow = 0
