// Package virtualnode is a machina driver whose VMs are Node objects it keeps Ready.
package virtualnode
