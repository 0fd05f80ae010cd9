package main

import (
	"io"

	"github.com/skillfleet/skillfleet/coordinator"
	"github.com/skillfleet/skillfleet/pkg/config"
	"github.com/skillfleet/skillfleet/pkg/pricing"
)

// estimate prints the expected calls, tokens and dollars per stage of a
// config before any call is made (train --estimate); nothing is written.
func estimate(o trainOpts, cfg *config.Config, stdout io.Writer) error {
	prices := pricing.Default()
	if o.prices != "" {
		var err error
		if prices, err = pricing.Load(o.prices); err != nil {
			return usageError{err}
		}
	}
	return startError(coordinator.WriteEstimate(stdout, cfg, prices))
}
