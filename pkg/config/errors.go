package config

import "strings"

// SourceOverride is the File of values given as overrides (--set).
const SourceOverride = "--set"

// FieldError is a configuration error about one key of one file. Its
// message is one line: "config: FILE: section.key: msg". File is
// [SourceOverride] for overrides and "" when no file is involved; Field is
// "" for errors about a whole file.
type FieldError struct {
	File  string
	Field string
	Msg   string
}

// Error returns the one-line message "config: FILE: section.key: msg".
func (e *FieldError) Error() string {
	return "config: " + location(e.File, e.Field) + e.Msg
}

// Warning is an accepted but questionable setting, worded like a
// [FieldError].
type Warning struct {
	File  string
	Field string
	Msg   string
}

// String returns the warning as one line: "config: FILE: section.key: msg".
func (w Warning) String() string {
	return "config: " + location(w.File, w.Field) + w.Msg
}

func location(file, field string) string {
	var b strings.Builder
	if file != "" {
		b.WriteString(file)
		b.WriteString(": ")
	}
	if field != "" {
		b.WriteString(field)
		b.WriteString(": ")
	}
	return b.String()
}
