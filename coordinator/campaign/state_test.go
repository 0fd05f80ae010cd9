package campaign

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReadRefusesANewerCampaignFormat(t *testing.T) {
	dir := t.TempDir()
	if err := Write(dir, &File{Name: "c", Cells: []CellStatus{{State: StateDone}}}); err != nil {
		t.Fatal(err)
	}
	if f, err := Read(dir); err != nil || f.Version != FileVersion {
		t.Fatalf("Read of this build's campaign.json = %+v, %v", f, err)
	}
	newer := `{"version": 2, "name": "c", "cells": []}`
	if err := os.WriteFile(filepath.Join(dir, FileName), []byte(newer), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Read(dir)
	if err == nil {
		t.Fatal("Read accepted a campaign.json of format 2")
	}
	for _, want := range []string{FileName, "campaign format 2", "this skillfleet's 1"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal %q does not say %q", err, want)
		}
	}
}
