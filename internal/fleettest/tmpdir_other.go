//go:build !linux

package fleettest

// memoryTempDir returns "": only Linux's /dev/shm is used.
func memoryTempDir() string { return "" }
