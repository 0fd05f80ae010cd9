package nightly

import (
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkHarvestCopilotCLI harvests a Copilot CLI store of 2,000
// sessions of 10 turns each, 50 of them in the project and
// recent: the cost of copying the store and reading it from the copy.
func BenchmarkHarvestCopilotCLI(b *testing.B) {
	home := b.TempDir()
	path := filepath.Join(home, "session-store.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		b.Fatal(err)
	}
	tx, err := db.Begin()
	if err != nil {
		b.Fatal(err)
	}
	if _, err := tx.Exec(`CREATE TABLE sessions (id TEXT PRIMARY KEY, cwd TEXT, branch TEXT, created_at TEXT, updated_at TEXT);
		CREATE TABLE turns (session_id TEXT, turn_index INTEGER, user_message TEXT, assistant_response TEXT);
		CREATE INDEX turns_session ON turns(session_id)`); err != nil {
		b.Fatal(err)
	}
	text := fmt.Sprintf("%0300d", 0)
	for i := range 2000 {
		cwd, ended := "/work/other", "2026-10-01 10:00:00"
		if i%40 == 0 {
			cwd, ended = "/work/app", "2026-11-24 10:00:00"
		}
		id := fmt.Sprintf("s%d", i)
		if _, err := tx.Exec(`INSERT INTO sessions VALUES (?, ?, 'main', '2026-10-01 09:00:00', ?)`, id, cwd, ended); err != nil {
			b.Fatal(err)
		}
		for j := range 10 {
			if _, err := tx.Exec(`INSERT INTO turns VALUES (?, ?, ?, ?)`, id, j, "please change "+text, "changed "+text); err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
	db.Close()
	o := HarvestOptions{Source: SourceCopilotCLI, CopilotHome: home, Projects: []string{"/work/app"},
		Now: time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)}
	b.ResetTimer()
	for b.Loop() {
		ds, _, err := Harvest(o)
		if err != nil || len(ds) != 50 {
			b.Fatalf("%d digests, %v; want 50", len(ds), err)
		}
	}
	st, _ := os.Stat(path)
	b.ReportMetric(float64(st.Size())/(1<<20), "store-MB")
}
