package runonce

import (
	"errors"
	"fmt"

	"github.com/tierlock/tierlock/zklock"
)

// Errors, for errors.Is. Every error Claim returns means this instance
// does not run the tick; ErrSkipped marks the deliberate skips, the others
// are failures worth a warning.
var (
	// ErrSkipped reports a run this instance must not make because another
	// made it or is making it, or leaves to another: ErrLockHeld,
	// ErrAlreadyRan, ErrYielded and ErrStale match it.
	ErrSkipped = errors.New("runonce: run skipped")
	// ErrLockHeld reports a tick this instance cannot run because the
	// job's lock is held by a run of an earlier tick still going
	// (elsewhere, or on this instance) or by a dead instance's hold until
	// its session expires: the run is skipped, not queued, and the tick is
	// not counted as run. It is lost unless the holder runs it after (a
	// run under cron.DelayIfStillRunning fires it when it ends; a holder
	// woken from a stop replays it): the Runner tells which, with the
	// episode's end, once the lock is free again. It matches ErrSkipped.
	ErrLockHeld = fmt.Errorf("%w: job lock held", ErrSkipped)
	// ErrAlreadyRan reports a tick that a run started less than the job's
	// window ago, by the server's clock, already covered (Claim), or, for
	// a named tick (ClaimTick), a tick whose run is recorded, told so too
	// of a claim that a stall of this process cut (its failure would have
	// been told for a tick the fleet ran). It matches ErrSkipped.
	ErrAlreadyRan = fmt.Errorf("%w: this tick already ran", ErrSkipped)
	// ErrYielded reports a run this instance stepped back from, so that
	// another instance makes it (WithSpread). It matches ErrSkipped.
	ErrYielded = fmt.Errorf("%w: yielded to another instance", ErrSkipped)
	// ErrStale reports a tick that its scheduler fired more than the
	// job's window late (ClaimTick): a replay of a tick the process slept
	// through (robfig/cron fires them after a stop), or a tick the
	// scheduler delayed, which the fleet ran. It is skipped, not run
	// again. It matches ErrSkipped.
	ErrStale = fmt.Errorf("%w: stale tick", ErrSkipped)
	// ErrTickUnknown reports a named tick (ClaimTick) that this instance
	// cannot run because the job's record cannot tell whether another
	// instance ran it: older than the runs the run node keeps, more than
	// a window before the fire of a run without a tick (within a window
	// of it, that run was its run: ErrAlreadyRan; that fire by a clock a
	// window or more ahead of this host's, before when that run fired by
	// this host's clock), or fired late when the
	// job's last run had no tick or the job has no run node. It reports
	// too a claim that a stall of this process cut past its lock timeout,
	// when the record read after the stall cannot tell its tick: a claim
	// without a tick (Claim) whose job's record shows runs, which cannot
	// be told from its tick's. It reports also a tick fired while this
	// instance's own claim of the job is still deciding, no run of it
	// holding the job's lock: another instance may run the tick. The
	// fleet may have run it or not; no instance runs it twice. It matches
	// ErrSkipped.
	ErrTickUnknown = fmt.Errorf("%w: tick unknown", ErrSkipped)
	// ErrTickLost reports a tick handed to Missed (not run here: its
	// scheduler did not fire it, or its claim could not decide it) that the
	// job's record shows no instance ran once its window and the lock
	// timeout passed: lost, unless an instance fires it late.
	// It is the Err of the observer's Lost events; no Claim returns it.
	ErrTickLost = errors.New("runonce: tick lost")
	// ErrPanicked reports a run that panicked (Do, Claim.Fail): the tick is
	// the fleet's run, not run again, and it failed.
	ErrPanicked = errors.New("runonce: the run panicked")
	// ErrSlowWrite reports a run given up because the run node's write
	// was answered too late to rule out that another instance ran the
	// tick (see the package doc, "The window"): the tick is lost, never
	// run twice.
	ErrSlowWrite = errors.New("runonce: run node write answered too late")
	// ErrJobActive reports a RemoveJob refused because an instance still
	// schedules the job: it wrote the job's run node while RemoveJob
	// waited for the last run to age (see RemoveJob). Nothing was deleted.
	ErrJobActive = errors.New("runonce: job still scheduled")
	// ErrInvalidKey reports a job key that cannot name a lock: empty,
	// longer than MaxKeyLen bytes, or making, once escaped below the
	// Runner's root, a path longer than ZooKeeper takes (see
	// zklock.ValidatePath).
	ErrInvalidKey = errors.New("runonce: invalid job key")
	// ErrInvalidOption reports an option with a value out of its range.
	ErrInvalidOption = errors.New("runonce: invalid option")
	// ErrClosed reports a call on a Runner after its Close, and a run
	// whose lock Close released.
	ErrClosed = errors.New("runonce: closed")
	// ErrNil reports a method called on a nil pointer, or given a nil
	// func.
	ErrNil = errors.New("runonce: method called on a nil pointer")
	// ErrNilSession reports a nil *zklock.Session given to New. It
	// matches zklock.ErrNilSession.
	ErrNilSession = fmt.Errorf("runonce: %w", zklock.ErrNilSession)
	// ErrNilContext reports a nil context. It matches zklock.ErrNilContext.
	ErrNilContext = fmt.Errorf("runonce: %w", zklock.ErrNilContext)
)
