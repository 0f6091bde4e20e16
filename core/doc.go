// Package core is machina's provider-agnostic machine lifecycle manager.
package core
