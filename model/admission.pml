/*
 * Model 4: tier 1's admission queue, tier/admit.go: the weighted FIFO
 * semaphore behind the gate, the read/write gate and the semaphore.
 *
 * N = 3 goroutines loop forever on an admission of SIZE = 2 units; each
 * has a fixed weight W(me): 1, 2, 1, so a request of 2 at the head holds
 * back a request of 1 that would fit (the head-blocking case). Each round a
 * goroutine calls tryAcquire, or acquire with a context that can end
 * (cancellable) or cannot; a goroutine that got its units gives them back
 * with release, or with handOff (falling back to release when handOff
 * refuses, as tier.Lock does). Every Go statement of admit.go that touches
 * shared state is one step here:
 *
 *   cur, nq  a.state: the units taken (low bits) and the goroutines
 *            counted as queued (high bits). One word in Go, so every
 *            atomic on it (Load, Add, CompareAndSwap) reads or writes both
 *            in one step (d_step). A Load copies both into s_cur, s_nq.
 *   mu       a.mu, as a ticket lock (sync.Mutex is starvation-free: its
 *            starvation mode hands it FIFO after 1 ms; a test-and-set
 *            would let the checker starve a goroutine on mu, which Go
 *            does not do)
 *   queue    the waiter list (under mu), here goroutine numbers, oldest
 *            first; ready[i] is "i's ready channel is closed"
 *
 * (Steps that are the target of a goto are atomic rather than d_step,
 * which Promela requires; both are one indivisible step.)
 *
 * Computations on a goroutine's own copies (s_cur, s_nq) and on the list
 * under mu are merged into the step of the atomic or list operation they
 * follow; they touch nothing another goroutine reads.
 *
 * Ending: a context's end (or closed's) is seen only by the select of a
 * queued waiter, so "it can end at any point" is a select that may take
 * that case whenever it is reached, also when ready is closed too (Go
 * picks among ready cases at random). acquire's fast path and slow take
 * never look at the context, as in the code.
 *
 * Ghost variables (not in the Go code) say who has what:
 *   hold[i]   units i holds from a successful acquire/tryAcquire, or got
 *             by a grant it is giving back (the undo); 0 once a call that
 *             failed returns: the contract says it then holds nothing
 *   handed    units of grants whose close reached a waiter still in its
 *             select or give-up check (ready[i] && inq[i])
 *   granting  units a grantLocked has added to cur and not yet closed
 *   nwaiting  waiters queued and not yet granted
 *   owe       goroutines that will run grantLocked before letting mu go
 *             (a release or handOff that found waiters, an undo, a head
 *             giving up)
 *   ncw[i]    i is in an acquire whose context cannot end and has not got
 *             its units yet (for the liveness property)
 *
 * Properties:
 *   monitor (every reachable state):
 *     units:   cur == hold[0] + hold[1] + hold[2] + handed + granting,
 *              cur <= SIZE: no unit is lost or granted twice, never more
 *              than SIZE taken;
 *     granted: a queued head whose request fits is being granted (owe > 0):
 *              a waiter never stays blocked while its units are free and
 *              nobody is about to grant them.
 *   FIFO: units are taken without being queued (fast path, tryAcquire,
 *     slow take) only while no waiter is queued and ungranted (the asserts
 *     on nwaiting); queued waiters are granted from the head only.
 *   ltl live: []<> !ncw[0] && []<> !ncw[1]: a goroutine of weight 1 and
 *     the one of weight 2 never wait for ever in an acquire whose context
 *     does not end (under weak fairness, pan -a -f; goroutine 2 is
 *     goroutine 0's twin).
 *   no invalid end states (there are no end states: everyone loops).
 *
 * Mutants:
 *   MUTANT_NO_UNDO    a waiter granted as it gives up does not give the
 *                     units back (returns its error holding them)
 *   MUTANT_NO_NOTIFY  a waiter leaving the head does not grant the ones
 *                     behind it
 *   MUTANT_FAST_IGNORES_QUEUE  acquire's fast path takes free units
 *                     without looking for queued waiters
 */

#ifndef N
#define N 3
#endif
#ifndef SIZE
#define SIZE 2
#endif
#ifndef SPINS
#define SPINS 4 /* admitSpins */
#endif
#define W(i) ((i) == 1 -> 2 : 1)

byte cur;      /* taken(a.state) */
byte nq;       /* queued(a.state) */
byte mu_next;  /* a.mu: next ticket */
byte mu_serve; /* a.mu: ticket being served */
byte queue[N];
byte qlen;
bool ready[N];

/* ghost */
byte hold[N];
byte handed;
byte granting;
byte nwaiting;
byte owe;
bool inq[N];
bool ncw[N];

inline lockmu() {
	atomic { t = mu_next; mu_next = (mu_next + 1) % N };
	d_step { mu_serve == t -> t = 0 }
}

inline unlockmu() {
	mu_serve = (mu_serve + 1) % N
}

/* Our a.state.CompareAndSwap(s, s+n) succeeded. */
inline took() {
	cur = cur + n; hold[me] = n; ncw[me] = 0; cancellable = 0;
	assert(nwaiting == 0); /* FIFO: nobody queued and ungranted */
	s_cur = 0; s_nq = 0
}

/* acquire's fast path: an attempt failed; retry or queue. */
inline nextAttempt() {
	s_cur = 0; s_nq = 0;
	if
	:: i == SPINS -> i = 0; goto slow
	:: else -> i++; goto fast /* runtime.Gosched() */
	fi
}

/* acquire's fast path: s := a.state.Load(), and the decision on s. */
inline fastLoad() {
	s_cur = cur; s_nq = nq;
	if
#ifndef MUTANT_FAST_IGNORES_QUEUE
	:: s_nq != 0 -> s_cur = 0; s_nq = 0; i = 0; goto slow /* queue behind the waiters */
	:: s_nq == 0 && SIZE - s_cur >= n -> goto fastCAS
	:: s_nq == 0 && SIZE - s_cur < n -> nextAttempt()
#else
	:: SIZE - s_cur >= n -> goto fastCAS
	:: else -> nextAttempt()
#endif
	fi
}

/* tryAcquire: s := a.state.Load(), and the decision on s. */
inline tryLoad() {
	s_cur = cur; s_nq = nq;
	if
	:: s_nq != 0 || SIZE - s_cur < n -> s_cur = 0; s_nq = 0; goto round /* false */
	:: else -> goto tryCAS
	fi
}

/* release: s := a.state.Add(-n); with waiters, grant them under mu. */
inline releaseAdd() {
	cur = cur - n; hold[me] = 0;
	if
	:: nq != 0 -> owe++; goto releaseGrant
	:: else -> goto round
	fi
}

/* grantLocked: mu is held and owe counts us. */
inline grantLocked() {
	do
	:: d_step { qlen > 0 && SIZE - cur >= W(queue[0]) -> skip }; /* w := a.head; a.state.Load(): w fits */
		d_step { /* a.state.Add(w.n - admitWaitOne); a.unlinkLocked(w) */
			next = queue[0];
			cur = cur + W(next); nq--; granting = W(next); nwaiting--;
			i = 0;
			do
			:: i + 1 < qlen -> queue[i] = queue[i + 1]; i++
			:: else -> break
			od;
			qlen--; queue[qlen] = 0; i = 0
		};
		d_step { /* close(w.ready) */
			ready[next] = 1;
			if
			:: inq[next] -> handed = handed + W(next)
			:: else
			fi;
			granting = 0; next = 0
		}
	:: atomic { !(qlen > 0 && SIZE - cur >= W(queue[0])) -> owe--; break } /* the head does not fit, or none */
	od
}

proctype goroutine(byte me) {
	byte n = W(me);
	bit cancellable;
	bit head;
	byte t;     /* mu ticket */
	byte i;     /* spin count, list index */
	byte next;  /* grantLocked: the waiter granted */
	byte s_cur; /* a loaded copy of a.state */
	byte s_nq;

round:
	if
	:: atomic { tryLoad() }
	:: atomic { cancellable = 1; fastLoad() }
	:: atomic { ncw[me] = 1; fastLoad() }
	fi;

	/* acquire: the fast path, at most SPINS + 1 attempts */
fast:
	atomic { fastLoad() };
fastCAS:
	atomic {
		if
		:: cur == s_cur && nq == s_nq -> took(); i = 0; goto entered
		:: else -> nextAttempt()
		fi
	};

	/* acquireSlow */
slow:
	lockmu();
	atomic { /* s := a.state.Add(admitWaitOne): nobody before us, n free? */
		nq++;
		if
		:: nq == 1 && SIZE - cur >= n -> goto slowTake
		:: else
		fi
	};
	d_step { ready[me] = 0; queue[qlen] = me; qlen++; inq[me] = 1; nwaiting++ }; /* pushLocked */
	unlockmu();
	if
	:: d_step { ready[me] -> inq[me] = 0; ready[me] = 0; handed = handed - n; hold[me] = n; ncw[me] = 0; cancellable = 0 };
		goto entered
	:: cancellable /* ctx.Done() or closed */
	fi;
	lockmu();
	atomic {
		if
		:: ready[me] -> /* granted as we gave up */
			inq[me] = 0; ready[me] = 0; handed = handed - n; hold[me] = n;
			goto undo
		:: else
		fi;
		/* wasHead := a.head == w; a.unlinkLocked(w) */
		inq[me] = 0; nwaiting--;
		i = 0;
		do
		:: i < qlen && queue[i] != me -> i++
		:: else -> break
		od;
		head = (i == 0);
		do
		:: i + 1 < qlen -> queue[i] = queue[i + 1]; i++
		:: else -> break
		od;
		qlen--; queue[qlen] = 0; i = 0;
#ifndef MUTANT_NO_NOTIFY
		if
		:: head -> owe++
		:: else
		fi
#endif
	};
	atomic { /* a.state.Add(-admitWaitOne) */
		nq--;
		if
		:: head -> head = 0; goto headLeft
		:: else
		fi
	};
	goto failed;
headLeft:
#ifndef MUTANT_NO_NOTIFY
	grantLocked();
#endif
	goto failed;
undo:
#ifndef MUTANT_NO_UNDO
	atomic { cur = cur - n; hold[me] = 0; owe++ }; /* a.state.Add(-n) */
	grantLocked();
#endif
failed: /* a.mu.Unlock(); return err: the caller holds nothing */
	atomic { unlockmu(); hold[me] = 0; cancellable = 0 };
	goto round;

slowTake:
	atomic { /* a.state.Add(n - admitWaitOne) */
		cur = cur + n; nq--; hold[me] = n; ncw[me] = 0; cancellable = 0;
		assert(nwaiting == 0) /* FIFO */
	};
	unlockmu();
	goto entered;

	/* tryAcquire: retried only when the word changed under it */
try:
	atomic { tryLoad() };
tryCAS:
	atomic {
		if
		:: cur == s_cur && nq == s_nq -> took(); goto entered
		:: else -> s_cur = 0; s_nq = 0; goto try
		fi
	};

	/* holding n units: give them back with release or handOff */
entered:
	if
	:: atomic { releaseAdd() }
	:: atomic { nq != 0 -> goto handOff } /* handOff's a.state.Load() saw waiters; one that saw none returns false: a release */
	fi;
release:
	atomic { releaseAdd() };
releaseGrant:
	lockmu();
	grantLocked();
	unlockmu();
	goto round;

handOff:
	lockmu();
	atomic { /* w := a.head; does it fit with our n (a.state.Load())? */
		if
		:: qlen == 0 || SIZE - cur + n < W(queue[0]) -> goto handOffRefused
		:: else
		fi
	};
	d_step { cur = cur - n; hold[me] = 0; owe++ }; /* a.state.Add(-n) */
	grantLocked();
	unlockmu();
	goto round;
handOffRefused: /* false: the caller keeps its units and releases them */
	unlockmu();
	goto release
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

/* The invariants, checked in every reachable state. */
active proctype monitor() {
end:	atomic {
		!(cur == hold[0] + hold[1] + hold[2] + handed + granting && cur <= SIZE &&
		  (qlen == 0 || SIZE - cur < W(queue[0]) || owe > 0)) -> assert(false)
	}
}

ltl live { []<> !ncw[0] && []<> !ncw[1] }
