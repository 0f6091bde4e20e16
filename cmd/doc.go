// Package cmd holds the main packages of machina's binaries.
package cmd
