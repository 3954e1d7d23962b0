package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tierlock/tierlock/internal/peers"
	"github.com/tierlock/tierlock/stress/internal/proto"
	"github.com/tierlock/tierlock/stress/internal/results"
)

// stressJSON runs stress with args and -json, wants exit status want and
// returns the summary and stdout.
func stressJSON(t *testing.T, want int, args ...string) (results.Summary, string) {
	t.Helper()
	jsonPath := filepath.Join(t.TempDir(), "r.json")
	code, stdout, _ := stress(t, append(args, "-json", jsonPath)...)
	if code != want {
		t.Fatalf("exit status %d, want %d", code, want)
	}
	return readSummary(t, jsonPath), stdout
}

// checkClean fails t unless r found no violation and no error.
func checkClean(t *testing.T, r results.Impl) {
	t.Helper()
	if c := r.Check; !c.OK() || r.Errors != 0 || r.Acquisitions <= 0 || int64(c.Holds) != r.Cost.HoldsWarmup+r.Acquisitions+r.Cost.HoldsAfter {
		t.Errorf("%s: check %+v, errors %d %q, %d acquisitions", r.Impl, c, r.Errors, r.ErrorSamples, r.Acquisitions)
	}
}

func TestRecipeRW(t *testing.T) {
	s, stdout := stressJSON(t, exitOK, "-recipe", "rw", "-readers", "0.8", "-impl", "tier",
		"-procs", "2", "-goroutines", "4", "-duration", "2s", "-hold", "1ms")
	if !strings.Contains(stdout, "readers max") || !strings.Contains(stdout, "PASS: read/write exclusion held") {
		t.Errorf("no read/write table or verdict:\n%s", stdout)
	}
	r := s.Results[0]
	checkClean(t, r)
	if !r.Check.TokensChecked {
		t.Error("writers' tokens were not checked")
	}
	rw := r.RW
	switch {
	case rw == nil:
		t.Fatal("no read/write figures")
	case rw.Reads == 0 || rw.Writes == 0 || rw.Reads+rw.Writes != r.Acquisitions:
		t.Errorf("%d reads + %d writes of %d holds", rw.Reads, rw.Writes, r.Acquisitions)
	case rw.ReadersMax < 2 || rw.ReadersMean < 1:
		t.Errorf("readers did not share: max %d, mean %.2f", rw.ReadersMax, rw.ReadersMean)
	case rw.WriteLatencyUS.P50 <= 0 || rw.WriteLatencyUS.P99 < rw.WriteLatencyUS.P50:
		t.Errorf("writer wait %+v", rw.WriteLatencyUS)
	}
}

func TestRecipeSemaphore(t *testing.T) {
	s, stdout := stressJSON(t, exitOK, "-recipe", "semaphore", "-leases", "4", "-permits", "2", "-impl", "tier",
		"-procs", "2", "-goroutines", "4", "-duration", "2s", "-hold", "20ms")
	if !strings.Contains(stdout, "lease utilization") || !strings.Contains(stdout, "PASS: at most 4 permits") {
		t.Errorf("no semaphore table or verdict:\n%s", stdout)
	}
	r := s.Results[0]
	checkClean(t, r)
	sem := r.Sem
	switch {
	case sem == nil:
		t.Fatal("no semaphore figures")
	case sem.PermitsMax != 4:
		t.Errorf("at most %d permits in use at once, want 4 (two holds of 2)", sem.PermitsMax)
	case sem.Utilization <= 0 || sem.Utilization > 1:
		t.Errorf("lease utilization %v", sem.Utilization)
	}
}

// TestRecipeNolockFails: without a lock, writers overlap readers and more
// than n permits are in use. The checker must say so.
func TestRecipeNolockFails(t *testing.T) {
	for _, args := range [][]string{
		{"-recipe", "rw", "-readers", "0.5"},
		{"-recipe", "semaphore", "-leases", "2"},
	} {
		t.Run(args[1], func(t *testing.T) {
			s, stdout := stressJSON(t, exitViolation, append(args, "-impl", "nolock", "-procs", "2", "-goroutines", "4",
				"-acquisitions", "200", "-hold", "200us")...)
			if s.OK || s.Results[0].Check.Overlaps == 0 || !strings.Contains(stdout, "FAIL") {
				t.Fatalf("no violation found without a lock: %+v", s.Results[0].Check)
			}
		})
	}
}

// TestRecipeCurator runs each recipe's tier and Curator side by side.
func TestRecipeCurator(t *testing.T) {
	if err := peers.Check(peers.Curator); err != nil {
		t.Skip(err)
	}
	for _, args := range [][]string{
		{"-recipe", "rw", "-readers", "0.9"},
		// One permit a hold: Curator's acquire of k > 1 takes its leases one
		// by one and can deadlock with another such acquirer.
		{"-recipe", "semaphore", "-leases", "3"},
	} {
		t.Run(args[1], func(t *testing.T) {
			s, _ := stressJSON(t, exitOK, append(args, "-impl", "all", "-procs", "2", "-goroutines", "3",
				"-duration", "2s", "-hold", "1ms")...)
			if len(s.Results) != 2 || s.Results[0].Impl != proto.Tier || s.Results[1].Impl != proto.Curator {
				t.Fatalf("results %d", len(s.Results))
			}
			for _, r := range s.Results {
				checkClean(t, r)
				if r.RW == nil && r.Sem == nil {
					t.Errorf("%s: no recipe figures", r.Impl)
				}
			}
		})
	}
}

func TestRecipeUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"-recipe", "queue"},
		{"-recipe", "rw", "-readers", "1.5"},
		{"-recipe", "rw", "-readers", "-0.1"},
		{"-readers", "0.5"},
		{"-leases", "3"},
		{"-recipe", "rw", "-leases", "3"},
		{"-recipe", "semaphore", "-leases", "0"},
		{"-recipe", "semaphore", "-permits", "4"},
		{"-recipe", "semaphore", "-permits", "0"},
		{"-recipe", "rw", "-impl", "zklock"},
		{"-recipe", "rw", "-handoff"},
		{"-recipe", "semaphore", "-mix", "tier:2"},
		{"-recipe", "rw", "-fault", "drop", "-impl", "curator"},
		{"-recipe", "semaphore", "-fault", "drop", "-impl", "nolock"},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(context.Background(), args, &stdout, &stderr); code != exitUsage {
			t.Errorf("stress %v: exit %d, want %d", args, code, exitUsage)
		}
		if !strings.HasPrefix(stderr.String(), "stress: ") {
			t.Errorf("stress %v: unclear error %q", args, stderr.String())
		}
	}
}

// TestRecipeFaultClose: the close fault (grants racing Close, issue 29) on
// the read/write lock's and the semaphore's workers: no violation, every
// fault recovered from.
func TestRecipeFaultClose(t *testing.T) {
	for _, args := range [][]string{
		{"-recipe", "rw", "-readers", "0.7"},
		{"-recipe", "semaphore", "-leases", "2"},
	} {
		t.Run(args[1], func(t *testing.T) {
			s, _ := stressJSON(t, exitOK, append(args, "-procs", "2", "-goroutines", "4", "-fault", "close",
				"-fault-every", "1s", "-fault-seed", "7", "-duration", "5s")...)
			r := s.Results[0]
			if !r.OK() || r.FaultsInjected == 0 || r.FaultsRecovered != r.FaultsInjected {
				t.Fatalf("%s: check %+v, %d of %d faults recovered from, failures %q",
					r.Impl, r.Check, r.FaultsRecovered, r.FaultsInjected, s.Failures)
			}
			for _, ev := range s.Faults {
				if !strings.HasPrefix(ev.Variant, "locks closed and made anew 20 times") {
					t.Errorf("fault %d: %q", ev.N, ev.Variant)
				}
			}
		})
	}
}

// TestRecipeFaults: faults on the workers of each recipe are recovered
// from, and every hold they took was seen lost in time.
func TestRecipeFaults(t *testing.T) {
	for _, args := range [][]string{
		{"-recipe", "rw", "-readers", "0.7"},
		{"-recipe", "semaphore", "-leases", "2"},
	} {
		t.Run(args[1], func(t *testing.T) {
			s, _ := stressJSON(t, exitOK, append(args, "-procs", "2", "-goroutines", "4", "-fault", "expire,drop,kill,stall",
				"-fault-every", "1s", "-fault-seed", "7", "-duration", "7s")...)
			r := s.Results[0]
			if !r.OK() || r.Impl != proto.Tier || r.FaultsInjected == 0 || r.FaultsRecovered != r.FaultsInjected {
				t.Fatalf("%s: check %+v, %d of %d faults recovered from, failures %q",
					r.Impl, r.Check, r.FaultsRecovered, r.FaultsInjected, s.Failures)
			}
			// A hold lost between its exit and its release is counted by
			// Release only, with no loss time to check.
			if r.Losses == 0 && r.Check.LossesChecked == 0 {
				t.Errorf("faults on holders, but no hold was lost")
			}
		})
	}
}
