package skillpkg

import "strings"

// OpenedFilesNote opens the reply of an agent CLI (backends/exec) that
// opened files of its skill: the files, in the order first opened, follow
// on the same line up to a "]", and a blank line separates the note from
// the agent's reply.
const OpenedFilesNote = "[skill files the agent opened:"

// NotedFiles returns the files a reply's [OpenedFilesNote] names (nil
// when the reply has no note).
func NotedFiles(reply string) []string {
	rest, ok := strings.CutPrefix(reply, OpenedFilesNote)
	if !ok {
		return nil
	}
	list, _, ok := strings.Cut(rest, "]")
	if !ok {
		return nil
	}
	var files []string
	for _, f := range strings.Split(list, ",") {
		if f = strings.TrimSpace(f); f != "" {
			files = append(files, f)
		}
	}
	return files
}

// CutNote returns a reply without its [OpenedFilesNote] (the reply as
// the agent wrote it).
func CutNote(reply string) string {
	if !strings.HasPrefix(reply, OpenedFilesNote) {
		return reply
	}
	if _, after, ok := strings.Cut(reply, "]\n\n"); ok {
		return after
	}
	return reply
}
