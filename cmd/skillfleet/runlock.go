package main

import "github.com/skillfleet/skillfleet/coordinator"

// lockRunDir makes this process the only coordinator of the run (or
// campaign) in dir; see coordinator.LockRunDir.
func lockRunDir(dir string) (unlock func(), err error) { return coordinator.LockRunDir(dir) }
