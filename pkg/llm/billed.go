package llm

import "errors"

// BilledError wraps the failure of a call that the provider billed anyway:
// a reply arrived and was counted, but could not be used (no choices, a
// body that does not decode, an agent that reported usage and then failed).
// Retry layers add Usage to [Response].FailedUsage, so spend on failed
// attempts is counted rather than lost.
type BilledError struct {
	Usage Usage
	Err   error
}

func (e *BilledError) Error() string { return e.Err.Error() }

func (e *BilledError) Unwrap() error { return e.Err }

// BilledUsage returns the usage the first [*BilledError] in err's chain
// records, or zero usage when the failed call was not billed.
func BilledUsage(err error) Usage {
	var b *BilledError
	if errors.As(err, &b) {
		return b.Usage
	}
	return Usage{}
}
