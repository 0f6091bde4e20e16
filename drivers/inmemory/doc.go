// Package inmemory is a machina driver whose VMs live in memory.
package inmemory
