// Package ui serves skillfleet's live dashboard: a Run page (progress,
// score curves, each step's edits and skill diff, the rejected-edit buffer,
// spend per stage × role × model, the skills), a Campaign page (the matrix
// of cells) and a Fleet page (workers, queues, failures by cause).
//
// Its only source is what runs write: the run dir's files, read with
// pkg/report's loaders, and the coordinator's live fleet status. Pages
// update by Server-Sent Events when those files change. Everything taken
// from a run is untrusted text: pages are html/template shells and the
// embedded script inserts data with textContent only.
package ui
