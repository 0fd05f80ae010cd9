// Package app uses package rules from non-test code.
package app

import "example.com/mod/rules"

// Run uses the rules.
func Run() int { return rules.Used() + rules.T{G: 1}.G }
