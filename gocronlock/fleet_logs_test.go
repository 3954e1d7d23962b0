package gocronlock_test

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fleetLogDir keeps the instances' logs of a fleet scene, for reading a
// run after it (a loaded run's figures say what was lost; the logs say
// why): each instance's stderr in <dir>/<test>-<instance>.log.
var fleetLogDir = flag.String("fleet.logdir", "", "write each fleet instance's log to this directory, <test>-<instance>.log")

// keepLogs writes f's instances' logs to -fleet.logdir, if set.
func (f *fleetRun) keepLogs(t *testing.T) {
	t.Helper()
	if *fleetLogDir == "" {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, in := range f.instances {
		name := strings.ReplaceAll(t.Name(), "/", "_") + "-" + in.name + ".log"
		if err := os.WriteFile(filepath.Join(*fleetLogDir, name), []byte(in.logs.String()), 0o644); err != nil {
			t.Errorf("keep %s's log: %v", in.name, err)
		}
	}
}
