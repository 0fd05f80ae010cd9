package materialize

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// SpreadsheetBench writes runnable SpreadsheetBench splits: for each id of
// the manifest (SkillOpt's data/spreadsheetbench_id_split), the task row
// of the source (SpreadsheetBench Verified 400 unpacked: its dataset.json
// beside the spreadsheet/<id>/ directories) with that id, as {id,
// instruction, instruction_type, answer_position, answer_sheet,
// spreadsheet_path}, and each task's directory of workbooks copied to
// out/<spreadsheet_path> (where the benchmark looks by default). A task
// without its directory is an error before anything is written.
func SpreadsheetBench(manifestDir string, sources []string, out string) (Counts, error) {
	dirs := map[string]string{} // spreadsheet_path -> the source directory
	counts, err := byID(manifestDir, sources, out, byIDSpec{
		benchmark: "SpreadsheetBench", keyField: "id",
		fields: []string{"id", "instruction", "instruction_type", "answer_position", "answer_sheet", "spreadsheet_path"},
		item: func(id string, row map[string]any) (map[string]any, error) {
			item, err := spreadsheetItem(id, row)
			if err != nil {
				return nil, err
			}
			sp := item["spreadsheet_path"].(string)
			dir, err := findDir(sources, sp)
			if err != nil {
				return nil, err
			}
			dirs[sp] = dir
			return item, nil
		},
	})
	if err != nil {
		return nil, err
	}
	for sp, dir := range dirs {
		if err := copyTree(dir, filepath.Join(out, filepath.FromSlash(sp))); err != nil {
			return nil, fmt.Errorf("copy %s: %w", dir, err)
		}
	}
	return counts, nil
}

func spreadsheetItem(id string, row map[string]any) (map[string]any, error) {
	item := map[string]any{"id": id}
	for _, f := range []string{"instruction", "instruction_type", "answer_position"} {
		v := strings.TrimSpace(text(row[f]))
		if v == "" {
			return nil, fmt.Errorf("field %s is missing or empty", f)
		}
		item[f] = v
	}
	if v := strings.TrimSpace(text(row["answer_sheet"])); v != "" {
		item["answer_sheet"] = v
	}
	sp := strings.TrimSpace(text(row["spreadsheet_path"]))
	if sp == "" {
		sp = "spreadsheet/" + id
	}
	if filepath.IsAbs(sp) || strings.Contains("/"+filepath.ToSlash(sp)+"/", "/../") {
		return nil, fmt.Errorf("spreadsheet_path %q leaves the dataset", sp)
	}
	item["spreadsheet_path"] = sp
	return item, nil
}

// findDir is the directory sp names under one of the sources (a source
// file's own directory, or a source directory).
func findDir(sources []string, sp string) (string, error) {
	var tried []string
	for _, s := range sources {
		root := s
		if st, err := os.Stat(s); err == nil && !st.IsDir() {
			root = filepath.Dir(s)
		}
		d := filepath.Join(root, filepath.FromSlash(sp))
		if st, err := os.Stat(d); err == nil && st.IsDir() {
			return d, nil
		}
		tried = append(tried, d)
	}
	return "", fmt.Errorf("no directory of workbooks at %s", strings.Join(tried, " or "))
}

// copyTree copies the regular files and directories under src to dst.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(target, 0o755)
		case !d.Type().IsRegular():
			return nil // links and devices are not part of a dataset
		}
		in, err := os.Open(p)
		if err != nil {
			return err
		}
		defer in.Close()
		outf, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
		if err != nil {
			return err
		}
		if _, err := io.Copy(outf, in); err != nil {
			outf.Close()
			return err
		}
		return outf.Close()
	})
}
