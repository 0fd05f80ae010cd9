// Package skillfleetv1 holds skillfleet's wire messages and services
// (generated from skillfleet.proto: tasks, results, the coordinator's
// gRPC service) and the wire version this build speaks.
package skillfleetv1

// WireVersion is the major version of the task and result messages this
// build speaks, carried in Task.wire_version and Result.wire_version. A
// message without the field (zero) comes from a build that predates the
// field and speaks version 1. Adding a field that an older peer may ignore
// keeps the version; a change an older peer would misread raises it.
const WireVersion uint32 = 1

// EffectiveWireVersion is v, or 1 for a message that carries none.
func EffectiveWireVersion(v uint32) uint32 {
	if v == 0 {
		return 1
	}
	return v
}
