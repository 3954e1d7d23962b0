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
	"github.com/tierlock/tierlock/stress/internal/runner"
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

// TestFaultClose: a worker's locks closed and made anew, 20 times, while
// its goroutines acquire them (grants racing Close, issue 29): no overlap,
// every fault recovered from, for tier and tier-handoff alike.
func TestFaultClose(t *testing.T) {
	for _, impl := range []string{"tier", "tier-handoff"} {
		t.Run(impl, func(t *testing.T) {
			s := stressFaults(t, false, "-fault", "close", "-impl", impl, "-duration", "5s", "-fault-every", "1s")
			for _, ev := range s.Faults {
				if ev.Kind != fault.Close || !strings.HasPrefix(ev.Variant, "locks closed and made anew 20 times") {
					t.Errorf("fault %d: %s %q", ev.N, ev.Kind, ev.Variant)
				}
			}
		})
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

// TestFaultPause stops a holder past its session (one pause): the holder
// must write on waking and be refused, by its lock or the server for the
// guarded write and by the fence for the fenced one, since a later holder
// wrote meanwhile; it must see its loss at once; its hold is cut at the
// stop, and no stale write landed in either history.
func TestFaultPause(t *testing.T) {
	s := stressFaults(t, false, "-fault", "pause", "-duration", "5s")
	session := s.Config.SessionTimeout.Seconds()
	for _, ev := range s.Faults {
		if ev.Kind != fault.Pause || ev.Variant != "holder stopped" {
			t.Fatalf("fault %d: %s: %s", ev.N, ev.Kind, ev.Variant)
		}
		if ev.HealedSec <= session || ev.SessionExpired == nil || !*ev.SessionExpired {
			t.Errorf("fault %d: stopped %.2fs; session expired: %v", ev.N, ev.HealedSec, ev.SessionExpired)
		}
		// Nobody could be granted before the server expired the session.
		if ev.RecoveryAnySec < session/2 {
			t.Errorf("fault %d: another worker acquired %.2fs after the stop", ev.N, ev.RecoveryAnySec)
		}
		if ev.LaterToken == 0 || !strings.HasPrefix(ev.WakeFence, "fenced write refused") ||
			!strings.HasPrefix(ev.WakeGuarded, "guarded write") || strings.Contains(ev.WakeGuarded, "applied") {
			t.Errorf("fault %d: later token %d; on waking: %q, %q", ev.N, ev.LaterToken, ev.WakeGuarded, ev.WakeFence)
		}
		if ev.LossAfterWakeSec == nil || *ev.LossAfterWakeSec > session || !strings.Contains(ev.HolderCause, "lock lost") {
			t.Errorf("fault %d: loss seen %v s after waking (%q)", ev.N, ev.LossAfterWakeSec, ev.HolderCause)
		}
	}
	r := s.Results[0]
	w := r.Writes
	switch {
	case r.Check.PausedCut < len(s.Faults) || r.SessionExpiries == 0:
		t.Errorf("%d holds cut at a stop, %d sessions expired, for %d pauses", r.Check.PausedCut, r.SessionExpiries, len(s.Faults))
	case w == nil || w.Guarded == nil || w.Guarded.Writes == 0 || w.Fenced.Writes == 0:
		t.Fatalf("writes %+v", w)
	case w.Stale() != 0 || w.GuardedErr != "":
		t.Errorf("stale writes landed: %s (%s)", w.Line(), w.GuardedErr)
	case w.RefusedWoken < len(s.Faults):
		t.Errorf("%d writes of paused workers refused on waking, for %d pauses", w.RefusedWoken, len(s.Faults))
	case int64(w.Guarded.Writes) < w.Workers.GuardedApplied || int64(w.Guarded.Writes) > w.Workers.GuardedApplied+w.Workers.GuardedUnknown:
		// The history holds every write seen applied, and of the others
		// at most those whose outcome was unknown.
		t.Errorf("%d guarded writes in the history; the workers saw %d applied, %d unknown",
			w.Guarded.Writes, w.Workers.GuardedApplied, w.Workers.GuardedUnknown)
	}
}

// TestFaultPauseUnfenced is the self-test of the check of stale writes:
// with the fenced store's fence off, the paused holder's write on waking
// lands after the later holder's, and the run must fail, naming it.
func TestFaultPauseUnfenced(t *testing.T) {
	t.Setenv(runner.EnvUnfenced, "1")
	jsonPath := filepath.Join(t.TempDir(), "r.json")
	code, stdout, _ := stress(t, "-procs", "2", "-goroutines", "4", "-fault-every", "1s", "-fault-seed", "7",
		"-fault", "pause", "-duration", "5s", "-json", jsonPath)
	if code != exitViolation || !strings.Contains(stdout, "a stale holder's write landed") {
		t.Fatalf("exit status %d, want %d, and the verdict", code, exitViolation)
	}
	s := readSummary(t, jsonPath)
	w := s.Results[0].Writes
	if s.OK || w == nil || w.Fenced.Stale == 0 || w.Guarded == nil || w.Guarded.Stale != 0 {
		t.Fatalf("ok %v, writes %+v", s.OK, w)
	}
	// Porcupine's check of the same history fails on the same write.
	porcupineFailed(t, s.Results[0].Porcupine, "the store admitted token")
	ex := w.Fenced.Examples[0]
	if ev := s.Faults[0]; ev.Kind != fault.Pause || ex.Write.Token >= ex.Prev.Token || ex.Write.Token >= ev.LaterToken ||
		!strings.Contains(ev.Failure, "fenced store admitted") {
		t.Errorf("stale write %+v; fault %+v", ex, *ev)
	}
}
