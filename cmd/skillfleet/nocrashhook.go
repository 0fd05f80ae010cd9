//go:build !crashhook

package main

// crashHook is nil outside test builds (see crashhook.go).
func crashHook() func(stage string, done int) { return nil }
