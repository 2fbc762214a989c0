package sriov

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// RunDir is where a run keeps its SR-IOV state under hymn's state
// directory (/run/hymn): the state file and, for a simulated NIC, its fake
// sysfs.
func RunDir(stateDir, run string) string { return filepath.Join(stateDir, run+"-sriov") }

// RemoveRun undoes what a (crashed) run left: it restores the original
// settings of the real VFs the run had taken, as its state file recorded
// them, and removes the run's SR-IOV directory. The simulated NIC's
// hidden namespace is an ordinary run namespace, which `hymn clean`
// deletes by its name. A run without SR-IOV state is not an error.
func RemoveRun(stateDir, run string, conf Configurator) error {
	dir := RunDir(stateDir, run)
	if err := RestoreState(filepath.Join(dir, "state.json"), conf); err != nil {
		// Keep the directory: the state file is the only record of the
		// VFs' original settings.
		return fmt.Errorf("run %s: %w", run, err)
	}
	if err := os.RemoveAll(dir); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// Runs lists the runs that have SR-IOV state under stateDir.
func Runs(stateDir string) []string {
	entries, _ := os.ReadDir(stateDir)
	var runs []string
	for _, e := range entries {
		if r, ok := strings.CutSuffix(e.Name(), "-sriov"); ok && e.IsDir() {
			runs = append(runs, r)
		}
	}
	return runs
}
