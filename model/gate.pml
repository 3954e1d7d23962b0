/*
 * Model 1: tier 1, the in-process gate of tier/gate.go.
 *
 * N goroutines loop forever; each round a goroutine either tries the gate
 * once (tryEnter) or enters it with a context that can end (cancellable)
 * or cannot; a goroutine that got the gate leaves it again. Every Go
 * statement of gate.go that touches shared state is one step here:
 *
 *   state    g.state, CAS 0->1 by tryEnter, Store(0) by leave
 *   waiting  g.waiting, the atomic mirror of len(queue)
 *   mu       g.mu, as a ticket lock (sync.Mutex is starvation-free: its
 *            starvation mode hands it FIFO after 1 ms; a plain test-and-set
 *            would let the checker starve a goroutine on mu, which Go does
 *            not do)
 *   queue    g.queue, the ready channels of the queued waiters, here
 *            their goroutine numbers; ready[i] is "i's channel is closed"
 *
 * Cancellation: a context's end is observed only by the select in enter,
 * so "cancellable at every step" is a select that may take its ctx.Done
 * case whenever it is reached, including when ready is closed too (Go
 * picks among ready cases at random).
 *
 * Ghost variables (not in the Go code) say who owns the gate:
 *   own[i]   i got the gate (CAS or hand-over) and has not given it up
 *   inq[i]   i has queued and has not yet decided (select, then the check
 *            under mu): a close of ready[i] in that window reaches i
 *   handed   number of i with ready[i] closed and inq[i]: hand-overs in
 *            flight to a waiter that will take them
 *   ncw[i]   i is in an enter whose context cannot end and has not got
 *            the gate yet (for the liveness property)
 *
 * Properties:
 *   invariant (monitor below): state == owners + handed. Since state is 0
 *     or 1 this is both "at most one owner, counting hand-overs in flight"
 *     and "the gate is never held by nobody".
 *   ltl live: []<> !ncw[0] - goroutine 0 never waits forever in an enter
 *     that is not cancelled (checked under weak fairness, pan -a -f;
 *     the goroutines are symmetric, so goroutine 0 stands for all).
 *   no invalid end states (there are no end states: everyone loops).
 *
 * Mutant (spin -DMUTANT_CLOSE_AFTER_UNLOCK): leave closes the first
 * waiter's channel after g.mu.Unlock(), as gate.go did before the fix; a
 * waiter whose context ends in that window returns ctx.Err() and the close
 * reaches nobody.
 */

#ifndef N
#define N 3
#endif
#ifndef SPINS
#define SPINS 4 /* as gate.go */
#endif

byte state;   /* g.state */
byte waiting; /* g.waiting */
byte mu_next; /* g.mu: next ticket */
byte mu_serve;/* g.mu: ticket being served */
byte queue[N];
byte qlen;
bool ready[N];

/* ghost */
bool own[N];
byte owners;
bool inq[N];
byte handed;
bool ncw[N];

/* g.state.CompareAndSwap(0, 1) */
inline cas(ok) {
	d_step {
		if
		:: state == 0 -> state = 1; own[me] = 1; owners++; ncw[me] = 0; ok = 1
		:: else -> ok = 0
		fi
	}
}

inline lockmu() {
	d_step { t = mu_next; mu_next = (mu_next + 1) % N };
	d_step { mu_serve == t -> t = 0 }
}

inline unlockmu() {
	mu_serve = (mu_serve + 1) % N
}

/* close(next): ownership passes to next if it still listens. */
inline closenext() {
	d_step {
		ready[next] = 1;
		own[me] = 0;
		owners--;
		if
		:: inq[next] -> handed++
		:: else
		fi;
		next = 0
	}
}

proctype goroutine(byte me) {
	bit ok;
	bit cancellable;
	byte t;    /* mu ticket */
	byte i;    /* spin count, queue index */
	byte next; /* leave: the waiter handed to */

round:
	if
	:: cas(ok); /* tryEnter */
		if
		:: ok -> goto entered
		:: else -> goto round
		fi
	:: cancellable = 1
	:: d_step { cancellable = 0; ncw[me] = 1 }
	fi;

	/* enter */
	cas(ok);
	if
	:: ok -> goto entered
	:: else
	fi;
	do
	:: i < SPINS && waiting == 0 ->
		cas(ok); /* runtime.Gosched(), then tryEnter */
		if
		:: ok -> i = 0; goto entered
		:: else -> i++
		fi
	:: else -> i = 0; break
	od;
	lockmu();
	waiting++;
	cas(ok); /* freed while we took mu */
	if
	:: ok -> waiting--; unlockmu(); goto entered
	:: else
	fi;
	d_step { ready[me] = 0; queue[qlen] = me; qlen++; inq[me] = 1 };
	unlockmu();
	if
	:: atomic { ready[me] -> inq[me] = 0; handed--; own[me] = 1; owners++; ncw[me] = 0; ready[me] = 0 };
		goto entered
	:: cancellable -> skip /* ctx.Done() */
	fi;
	lockmu();
	if
	:: ready[me] -> /* handed to us as we gave up: pass it on */
		d_step { inq[me] = 0; handed--; own[me] = 1; owners++; ready[me] = 0 };
		unlockmu();
		goto leave
	:: else
	fi;
	d_step {
		inq[me] = 0;
		i = 0;
		do
		:: i < qlen && queue[i] != me -> i++
		:: else -> break
		od;
		if
		:: i < qlen ->
			do
			:: i + 1 < qlen -> queue[i] = queue[i + 1]; i++
			:: else -> break
			od;
			qlen--;
			queue[qlen] = 0;
			ok = 1
		:: else -> ok = 0 /* not in the queue: only the mutant gets here */
		fi;
		i = 0
	};
	if
	:: ok -> waiting--
	:: else
	fi;
	unlockmu();
	cancellable = 0;
	goto round;

entered:
	cancellable = 0;
	/* critical section */

leave:
	if
	:: waiting == 0 ->
		d_step { state = 0; own[me] = 0; owners-- };
		if
		:: waiting == 0 -> goto round
		:: else
		fi;
		/* a waiter queued meanwhile: take the gate back to hand it over */
		cas(ok);
		if
		:: ok
		:: else -> goto round
		fi
	:: else
	fi;
	lockmu();
	if
	:: qlen == 0 ->
		d_step { state = 0; own[me] = 0; owners-- };
		unlockmu();
		goto round
	:: else
	fi;
	d_step {
		next = queue[0];
		i = 0;
		do
		:: i + 1 < qlen -> queue[i] = queue[i + 1]; i++
		:: else -> break
		od;
		qlen--;
		queue[qlen] = 0;
		i = 0
	};
	waiting--;
#ifdef MUTANT_CLOSE_AFTER_UNLOCK
	unlockmu();
	closenext();
#else
	closenext();
	unlockmu();
#endif
	goto round
}

init {
	byte k;
	atomic {
		do
		:: k < N -> run goroutine(k); k++
		:: else -> break
		od
	}
}

/* The invariant, checked in every reachable state. */
active proctype monitor() {
end:	atomic { !(state == owners + handed) -> assert(false) }
}

ltl live { []<> !ncw[0] }
