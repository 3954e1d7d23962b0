package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tierlock/tierlock/internal/zkserver"
	"github.com/tierlock/tierlock/stress/internal/fault"
	"github.com/tierlock/tierlock/stress/internal/results"
)

// Fault runs are short (P=2, G=4, a few seconds) with a fault about every
// second after the previous one's recovery, so that each test sees at least
// one fault of its kind, and a fixed seed, so that the schedule is the same
// every time.

// stressFaults runs stress with -fault and returns its summary. ownServer runs
// without -zk, so that stress starts (and may kill) its own ZooKeeper.
func stressFaults(t *testing.T, ownServer bool, args ...string) results.Summary {
	t.Helper()
	jsonPath := filepath.Join(t.TempDir(), "r.json")
	// Flags given later win: args can change the defaults.
	args = append([]string{"-procs", "2", "-goroutines", "4", "-fault-every", "1s", "-fault-seed", "7", "-json", jsonPath}, args...)
	var code int
	if ownServer {
		if _, ok := zkserver.FromEnv(); ok {
			t.Skip("$" + zkserver.EnvServers + " is set: stress cannot start and kill its own ZooKeeper")
		}
		var stdout, stderr bytes.Buffer
		args = append(args, "-quiet")
		code = run(context.Background(), args, &stdout, &stderr)
		t.Logf("stress %s: exit %d\n%s%s", strings.Join(args, " "), code, stdout.String(), stderr.String())
	} else {
		code, _, _ = stress(t, args...)
	}
	if code != exitOK {
		t.Fatalf("exit status %d, want 0", code)
	}
	s := readSummary(t, jsonPath)
	if !s.OK || len(s.Results) != 1 {
		t.Fatalf("summary: ok %v, %d results, failures %q", s.OK, len(s.Results), s.Failures)
	}
	r := s.Results[0]
	if c := r.Check; c.Overlaps != 0 || c.TokenRegressions != 0 || c.Lost != 0 || !c.TokensChecked || r.Errors != 0 {
		t.Errorf("%s: violations %+v, errors %d %q", r.Impl, c, r.Errors, r.ErrorSamples)
	}
	if len(s.Faults) == 0 || r.FaultsInjected != len(s.Faults) || r.FaultsRecovered != r.FaultsInjected {
		t.Fatalf("%d faults in the log, %d injected, %d recovered from", len(s.Faults), r.FaultsInjected, r.FaultsRecovered)
	}
	for _, ev := range s.Faults {
		if !ev.Recovered || ev.Failure != "" || ev.RecoveryOwnSec < 0 || ev.RecoveryAnySec < 0 || ev.Target == "" {
			t.Errorf("fault %+v", *ev)
		}
	}
	return s
}

func TestFaultExpire(t *testing.T) {
	s := stressFaults(t, false, "-fault", "expire", "-duration", "7s")
	for _, ev := range s.Faults {
		if ev.Kind != fault.Expire || ev.SessionExpired == nil || !*ev.SessionExpired {
			t.Errorf("fault %d: %s, session expired %v", ev.N, ev.Kind, ev.SessionExpired)
		}
		if ev.Variant != "holder frozen" {
			continue
		}
		// The holder must see the loss at two thirds of the session
		// timeout, well before the server expires the session.
		if ev.HolderLossSec == nil || *ev.HolderLossSec > s.Config.SessionTimeout.Seconds() ||
			!strings.Contains(ev.HolderCause, "lock lost") {
			t.Errorf("fault %d: holder saw its loss after %v s: %q", ev.N, ev.HolderLossSec, ev.HolderCause)
		}
		// Nobody acquires before the session expired.
		if ev.RecoveryAnySec < *ev.HolderLossSec {
			t.Errorf("fault %d: another worker acquired after %.2fs, before the holder saw its loss", ev.N, ev.RecoveryAnySec)
		}
	}
	if r := s.Results[0]; r.Losses == 0 || r.SessionExpiries == 0 {
		t.Errorf("%d holds lost, %d sessions expired", r.Losses, r.SessionExpiries)
	}
}

func TestFaultDrop(t *testing.T) {
	// Seed 5 drops a holder's connection, then cuts one after a few bytes.
	s := stressFaults(t, false, "-fault", "drop", "-duration", "7s", "-fault-every", "400ms", "-fault-seed", "5")
	for _, ev := range s.Faults {
		if ev.Kind != fault.Drop {
			t.Errorf("fault %d is %s", ev.N, ev.Kind)
		}
		if strings.HasPrefix(ev.Variant, "holder's") && (ev.HolderLossSec == nil || *ev.HolderLossSec > 1) {
			t.Errorf("fault %d: the holder saw its loss after %v s", ev.N, ev.HolderLossSec)
		}
		if strings.HasPrefix(ev.Variant, "dropped after") && !strings.HasPrefix(ev.Note, "fired") {
			t.Errorf("fault %d: %s", ev.N, ev.Note)
		}
	}
}

func TestFaultKill(t *testing.T) {
	s := stressFaults(t, false, "-fault", "kill", "-duration", "7s")
	holders := 0
	for _, ev := range s.Faults {
		if ev.Kind != fault.Kill || !strings.Contains(ev.Note, "replaced by worker") {
			t.Errorf("fault %d: %s: %s", ev.N, ev.Kind, ev.Note)
		}
		if ev.Variant == "holder killed" {
			holders++
			// The killed holder's lock passes on only once its session
			// expired.
			if ev.RecoveryAnySec < s.Config.SessionTimeout.Seconds()/2 {
				t.Errorf("fault %d: another worker acquired %.2fs after the holder was killed", ev.N, ev.RecoveryAnySec)
			}
		}
	}
	r := s.Results[0]
	if r.Check.Cut < holders {
		t.Errorf("%d holders killed, %d holds cut", holders, r.Check.Cut)
	}
	if len(r.ProcShares) != 2 {
		t.Errorf("shares of %d slots, want 2: %v", len(r.ProcShares), r.ProcShares)
	}
}

func TestFaultRestart(t *testing.T) {
	s := stressFaults(t, true, "-fault", "restart", "-duration", "6s")
	for _, ev := range s.Faults {
		if ev.Kind != fault.Restart || ev.Variant != "standalone server" || ev.HealedSec <= 0 {
			t.Errorf("fault %+v", *ev)
		}
	}
	if r := s.Results[0]; r.ZKRequests != -1 || r.RequestsPerAcq != -1 {
		t.Errorf("requests %d (%v per acquisition) across a server restart", r.ZKRequests, r.RequestsPerAcq)
	}
}

func TestFaultLeader(t *testing.T) {
	s := stressFaults(t, true, "-fault", "leader", "-duration", "7s")
	if len(s.Servers) != 3 {
		t.Fatalf("servers %v, want an ensemble of 3", s.Servers)
	}
	for _, ev := range s.Faults {
		if ev.Kind != fault.Leader || !strings.Contains(ev.Note, "led after") {
			t.Errorf("fault %+v", *ev)
		}
	}
}
