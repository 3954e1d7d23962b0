/*
 * Model 5: the session's write path (zklock/internal/writes: queue.go,
 * writer.go; create.go's createAndList, send.go's bound, hold.go's
 * giveUp, guard.go's Hold.Txn).
 *
 * Every write a session has waiting (an acquisition's create, admitted
 * first under the bound with its listing; a released node's delete and a
 * hold's guarded transaction, both exempt from the bound) is appended to
 * one FIFO queue. One writer goroutine takes a batch from the head (whole
 * writes, at most MAXOPS ops), sends it as one request, waits for the
 * answer, settles each write, and takes the next: one batch in flight. A
 * queue of deletes only lingers (foldWait) so that a create can carry
 * them. The server applies a request atomically, in op order, or refuses
 * it whole at its first failing op; the writer fails that op's write alone
 * and puts the others back at the head, in order: they go again together,
 * in the next batch, and once refused twice (APART) apart, each its own
 * request, side by side, one per path (takeApartLocked: a second write of
 * a path stays for the next round), so that many failing writes fail in a
 * few round trips; the apart requests race, and the server applies them in
 * either order.
 *
 * Processes, and the code they stand for:
 *
 *   lock(0), lock(1)  a Lock on path p (0) and one on path q (1). Each
 *            starts holding a node and loops: perhaps a guarded
 *            transaction (Hold.Txn: writes.Txn, then <-w.Done(), or its
 *            ctx ends while it is queued: writes.GiveUp, taken back); then it holds for
 *            ever (the process ends) or releases (Hold.Release -> giveUp
 *            -> writes.Delete); then it stops acquiring, or acquires again
 *            (Lock.attempt -> enqueue -> createAndList): admission for
 *            the create and the listing behind it (flight.acquire(ctx, 2)),
 *            the create queued (writes.Create), <-w.Sent(), or its ctx ends
 *            while the create is still queued (writes.GiveUp: both
 *            places given back, nothing written; Acquire is called again);
 *            the listing (listBehind) on the wire, its answer, <-w.done;
 *            a create that failed on its own op (the path's parent, a
 *            container, removed: NoNode) makes the parents
 *            (createFailed, ensureParents) and creates again; else it holds.
 *   reader   a waiter's read (Session.send: a listing or getW, one
 *            place), looping until it stops: the bound's other occupant,
 *            and requests on the wire that the writer's answers come behind.
 *   writer   Queue.run: started by add or by the timer (startLocked
 *            -> q.c.Go(q.run)); each round takeLocked (a batch of
 *            whole writes from the head, at most MAXOPS ops, the first
 *            always; nil while the queue is empty or holds only deletes
 *            whose foldWait is not over), send (the batch on the wire, the
 *            creates' w.sent closed: the tap saw it written), the answer,
 *            settle / settleOne / end / requeue. On nil it clears running and
 *            calls startLocked(false) (the timer armed for lingering
 *            deletes) before it returns.
 *   clock    time, as far as foldWait needs it: `aged` is "the queue's
 *            head has waited foldWait" (lingerLocked <= 0); it becomes
 *            true at any moment while the queue holds deletes only, and
 *            false when the head is taken or withdrawn, or a write is
 *            queued in an empty queue. The timer (q.timer, time.AfterFunc
 *            armed by startLocked) fires once the head has aged: wake ->
 *            startLocked(false).
 *   server   the ZooKeeper server and the network, one process (one
 *            fewer for the fairness search; see below). It applies the
 *            batch on the wire (a multi, or a lone create or delete), the
 *            session's one write request, in one step: op by op, or none
 *            when one fails, the first failing op named in the answer
 *            (failat); reads change nothing there, so their application
 *            is no step. It returns the answers in the order of the
 *            requests (the batch's once applied), each as late as it
 *            likes (other processes move in between without bound) but
 *            eventually (weak fairness): a read's or listing's answer
 *            gives its place back (Session.make's flight.release,
 *            wakeLocked); the batch's answer wakes the writer. And the
 *            environment's faults, at most F in a run, on path p (the
 *            locks are alike: the model is the same with their names
 *            swapped): an operator deletes a released node before its
 *            delete arrives (that delete then fails, NoNode); the path's
 *            parent, a container, is removed while the session has no
 *            node under it (the next create fails, NoNode); a
 *            transaction's check fails (the guarded resource moved on).
 *            Weak fairness holds for the network's part too: reads ahead
 *            of the batch are finitely many and every later request is
 *            answered behind it, so a run in which the server moves for
 *            ever applies and answers the batch; the faults are bounded.
 *   monitor  property (d) in every state.
 *
 * Variables:
 *   q[], qlen        Queue.queue, oldest first; a write is named by
 *                    its kind and lock: W(CRE|DEL|TX, l). A Lock has at
 *                    most one of each waiting (asserted by add's room);
 *   nnd              writes in q that are not deletes (lingerLocked: 0
 *                    unless nnd == 0);
 *   taken[w]         a Write's stage past queued: in the batch out;
 *   running          Queue.running; wgo: a `go q.run` started and
 *                    not yet running; wactive: q.run runs (ghosts: the
 *                    goroutine, which running only promises);
 *   armed            q.timer armed and not yet fired;
 *   batch[], blen    the batch out (send's argument);
 *   failat           the answer: 0 all applied, i+1 batch[i]'s op failed
 *                    (settleOne's failing: the first res[i].Error);
 *   refop            ghost: the write whose op the server found failing;
 *   wire[]           the session's requests written and not yet answered,
 *                    in order (RQ_RD, RQ_LST(l), RQ_WR); bapplied: the
 *                    batch among them is applied (reads change nothing at
 *                    the server, so only the batch's application is a step;
 *                    it precedes its answer, and so every later request's);
 *   fn, fq, queued   inflight's n, queue and waiters (limit SIZE, fixed);
 *   cst[l]           lock l's create: 0 none, 1 queued (w.sent open),
 *                    2 on the wire (w.sent closed; put back after a refusal
 *                    it stays 2, as w.wired does), 3 done, 4 failed;
 *   tst[l]           its transaction: 0 none, 1 queued or out, 3 done,
 *                    4 failed;
 *   nodes[l], rel[l], parent[l]  ghosts of the server: the session's
 *                    nodes on path l, l's released node still there, l's
 *                    parent exists.
 * The printf("cover: ...") statements change nothing: model_test.go
 * requires each to be reached (a batch bounded, two paths' creates in one
 * request, a create with the other path's delete, each kind of write
 * refused and put back), so that the checks above are not vacuous there.
 *
 * Properties:
 *   (a) one node per path: after each request the server applies, the
 *       session has at most one node on each path (a create is never
 *       applied before its path's released node's delete); at each
 *       release, the lock's previous released node is gone.
 *   (b) a write fails only for its own op: a write ended with an error is
 *       the one whose op the server found failing (asserted in end); every
 *       other write of a refused batch goes back to the queue's head, in
 *       order (settle), to be applied later ((c) says it is).
 *   (c) liveness (ltl live), under weak fairness, with answers as late as
 *       the environment likes: every released node is eventually deleted,
 *       every queued create and transaction eventually answered (or
 *       withdrawn by its caller).
 *   (d) no stranded write (monitor): while the queue holds a write, the
 *       writer's goroutine is running or started, or the timer is armed.
 *   No invalid end state: locks that hold for ever or stop, the reader
 *   stopped, and every write answered; the bound's count never goes
 *   below 0 nor above SIZE.
 *
 * Abstracted: ops are named by what they do to the server's state (a
 * create, the delete of the released node, a transaction whose ops touch
 * no lock node); sizes are ops (MAXOPS for maxBatchOps and maxBatchBytes:
 * a transaction is 2 ops); time is an order, foldWait a flag (`aged`); the
 * listing's answer carries nothing (waitTurn, the grant and the other
 * processes on the paths are not modelled: what they wait for is the
 * released node's delete, rel); the bound's limit is fixed. Not modelled:
 * connection loss (an answer without per-op results, which settle ends
 * write by write: creates to protection mode, Model 2; deletes back at the
 * head of the queue, sent again once connected; the writer's wait for a
 * connection), session expiry (dropMoot),
 * a delete refused for another reason than NoNode (deleteGuaranteed), a
 * ctx that ends once the write is taken (GiveUp of a sealed write: the writer queues the
 * delete of what it made at the head as it settles it; Hold.Txn's
 * ErrOutcomeUnknown), TryAcquire, Close (shut, drop), two Locks of
 * one session on one path (an RWLock's), refusals of a create other than
 * NoNode (the acquisition fails instead of retrying: the same for the
 * writer).
 *
 * Variants and mutants (each fails the property named; model_test.go):
 *   MUTANT_CREATE_BEFORE_DELETE  takeLocked/createsAhead (the code's
 *       seeded bug create-before-delete): a batch with a create leaves its
 *       deletes at the head for the next batch; the create is applied
 *       before its path's delete: (a).
 *   MUTANT_APART_ANY_PATH  takeApartLocked takes the writes going apart
 *       at the head with no regard for their paths: sent apart, they race,
 *       and a create can be applied before its path's delete: (a).
 *   MUTANT_FAIL_WHOLE_BATCH  settleOne ends every write of a refused batch
 *       with the refusal: (b).
 *   MUTANT_NO_REARM  q.run returns on a nil batch without startLocked: a
 *       delete queued while a batch was out lingers for ever unless a
 *       create comes: (c) (with assertions off; (d) in the safety run).
 *   STRANDED  q.run as the code at 9aebee3 (writer.go) has it:
 *       `_ = q.startLocked(false)` ignores the answer, so when foldWait
 *       ends between takeLocked's lingerLocked and startLocked's, running
 *       is set and no goroutine runs: every later write is stranded: (d),
 *       and (c). Without it the model goes on with the next batch (the
 *       fix the code needs).
 */

#ifndef SIZE
#define SIZE 4   /* places in the bound: both locks' creates and listings, or one and the reader */
#endif
#ifndef MAXOPS
#define MAXOPS 3 /* a batch's ops (the code's 1024 ops and 512 KiB): a transaction (2) and one more write; not both locks' deletes and creates */
#endif
#ifndef F
#define F 1      /* faults of the environment in a run */
#endif
#ifndef C
#define C 1      /* ctx ends (withdrawals) in a run */
#endif
#ifndef TXN
#define TXN 1    /* holds run guarded transactions */
#endif
#ifndef APART
#define APART 2  /* refusals at another's op after which a write goes apart (the code's apartAfter) */
#endif

#define CRE 0
#define DEL 1
#define TX 2
#define W(k, l) (1 + (k) * 2 + (l))
#define KIND(w) (((w) - 1) / 2)
#define LK(w) (((w) - 1) % 2)
#define OPS(w) (KIND(w) == TX -> 2 : 1)
#define QN 6     /* a create, a delete and a transaction per lock */

#define RD 2     /* the reader's number in the bound (the locks are 0 and 1) */
#define WT(i) ((i) == RD -> 1 : 2)

#define RQ_RD 1
#define RQ_LST(l) (2 + (l))
#define RQ_WR 4
#define WN 4     /* the reader's read, two listings, the batch */

/* writes.Queue */
byte q[QN];
byte qlen;
byte nnd;
bool taken[7];
bool running;
bool wgo;
bool wactive;
bool armed;
bool aged;
bool st;         /* startLocked's answer (scratch, always reset) */
byte batch[QN];
byte blen;
byte refused[7]; /* times its batch was refused at another write's op (takeLocked) */
bool apart;      /* the batch on the wire is such writes, each its own request */
bool bfail[QN];  /* apart: the write at that place failed */
byte failat;
byte refop;
bool wans;       /* the batch's answer arrived */

/* the wire */
byte wire[WN];
byte wlen;
bool bapplied;   /* the batch on the wire is applied */

/* inflight */
byte fn;
byte fq[3];
byte fqlen;
bool queued[3];

/* the locks and the reader */
byte cst[2];
byte tst[2];
bool listed[2];
bool rdone;
byte nc;         /* ctx ends so far */

/* the server */
byte nodes[2];
bool rel[2];
bool parent[2];
byte nf;         /* faults so far */

/* startLocked(now) under q.mu: st says whether to start q.run. */
inline startLocked(now) {
	if
	:: running || qlen == 0 -> st = 0
	:: else ->
		if
		:: !(now) && nnd == 0 && !aged -> armed = 1; st = 0 /* lingerLocked > 0: the timer */
		:: else -> running = 1; st = 1
		fi
	fi
}

/* Queue.add: appended, and the writer started (a create or a
   transaction at once, deletes once the head has lingered). */
inline add(w) {
	assert(qlen < QN);
	if
	:: qlen == 0 -> aged = 0 /* a new head, just queued */
	:: else
	fi;
	q[qlen] = w;
	qlen++;
	refused[w] = 0; /* a new write (a Lock has one of each kind waiting) */
	if
	:: KIND(w) != DEL -> nnd++
	:: else
	fi;
	startLocked(KIND(w) != DEL);
	if
	:: st -> wgo = 1; st = 0 /* go q.run */
	:: else
	fi
}

/* Queue.GiveUp(w) of a write queued and not taken (its caller's ctx
   ended before the batch took it). */
inline withdraw(w) {
	assert(!taken[w]);
	i = 0;
	do
	:: q[i] == w -> break
	:: else -> i++
	od;
	if
	:: i == 0 -> aged = 0
	:: else
	fi;
	do
	:: i + 1 < qlen -> q[i] = q[i + 1]; i++
	:: else -> break
	od;
	qlen--;
	q[qlen] = 0;
	i = 0;
	if
	:: KIND(w) != DEL -> nnd--
	:: else
	fi
}

/* inflight.acquire(ctx, WT(me)): admitted at once if it fits and nobody
   waits, else queued until wakeLocked closes our ready. Used in an atomic
   sequence followed by the wait, !queued[me] (<-ready), and what the
   goroutine does once admitted: the sequence is interrupted there while
   we wait. No ctx ends while queued (Model 4 checks the admission's
   give-up paths). */
inline admit() {
	if
	:: fn + WT(me) <= SIZE && fqlen == 0 -> fn = fn + WT(me)
	:: else -> fq[fqlen] = me; fqlen++; queued[me] = 1
	fi
}

/* inflight.release/giveBack of k places, then wakeLocked: admit from the
   head while it fits. */
inline release(k) {
	assert(fn >= k);
	fn = fn - k;
	do
	:: fqlen > 0 && fn + WT(fq[0]) <= SIZE ->
		fn = fn + WT(fq[0]);
		queued[fq[0]] = 0;
		j = 0;
		do
		:: j + 1 < fqlen -> fq[j] = fq[j + 1]; j++
		:: else -> break
		od;
		fqlen--;
		fq[fqlen] = 0;
		j = 0
	:: else -> break
	od
}

inline onWire(r) {
	assert(wlen < WN);
	wire[wlen] = r;
	wlen++
}

/* Queue.end, for a write whose op succeeded (ok) or failed: a
   create gives its place in the bound back and its acquisition reads the
   result; a delete that failed met NoNode (the model's only failure of a
   delete): its node is gone, done; a transaction's caller reads its
   results. (b): a write ends with an error only if its own op failed. */
inline finish(w, ok) {
	assert(ok || w == refop); /* (b) */
	taken[w] = 0;
	if
	:: KIND(w) == CRE -> release(1); cst[LK(w)] = (ok -> 3 : 4)
	:: KIND(w) == TX -> tst[LK(w)] = (ok -> 3 : 4)
	:: KIND(w) == DEL
	fi
}

/* Hold.Release -> giveUp -> writes.Delete */
inline releaseNode() {
	assert(!rel[me] && nodes[me] == 1); /* (a): the previous released node is gone */
	rel[me] = 1;
	add(W(DEL, me))
}

proctype lock(byte me) {
	byte i, j;
held:
	if
#if TXN
	:: atomic { add(W(TX, me)); tst[me] = 1 }; /* Hold.Txn: writes.Txn */
		if
		:: atomic { tst[me] >= 3 -> tst[me] = 0 } /* <-w.done */
		:: atomic { /* ctx ended while queued: withdrawn, never sent */
			nc < C && tst[me] == 1 && !taken[W(TX, me)] ->
			nc++; withdraw(W(TX, me)); tst[me] = 0
		   }
		fi;
		goto held
#endif
	:: atomic { releaseNode() } /* and acquires again */
	:: atomic { releaseNode() }; goto stopped /* and acquires no more */
	:: goto holding /* held for ever */
	fi;
again:
	atomic { /* createAndList: s.flight.acquire(ctx, 2, ...), then writes.Create */
		admit();
		!queued[me];
		cst[me] = 1;
		add(W(CRE, me))
	};
	if
	:: atomic { cst[me] >= 2 -> onWire(RQ_LST(me)) } /* <-w.sent; listBehind */
	:: atomic { /* <-ctx.Done(): withdrawn, both places given back */
		nc < C && cst[me] == 1 ->
		nc++; withdraw(W(CRE, me)); cst[me] = 0; release(2)
	   };
		goto again /* Acquire called again */
	fi;
	if
	:: atomic { /* the listing's answer, then <-w.done: our node (waitTurn, the grant: not modelled) */
		listed[me] && cst[me] == 3 -> listed[me] = 0; cst[me] = 0
	   };
		goto held
	:: atomic { /* the create failed on its own op, NoNode: ensureParents, create again */
		listed[me] && cst[me] == 4 -> listed[me] = 0; cst[me] = 0; parent[me] = 1
	   };
		goto again
	fi;
holding:
stopped:
	skip
}

proctype reader() {
	byte me = RD;
	byte j;
end:
	do
	:: atomic { admit(); !queued[me]; onWire(RQ_RD) }; /* s.send: flight.acquire(ctx, 1, ...), then the read */
		atomic { rdone -> rdone = 0 } /* its answer */
	:: break
	od
}

proctype writer() {
	byte i, j, n, ops, w, seen;
end_idle:
	atomic { wgo -> wgo = 0; wactive = 1 }; /* go q.run */
	do
	:: atomic {
		if
		:: qlen == 0 || (nnd == 0 && !aged) -> /* takeLocked: nil */
			running = 0;
#ifndef MUTANT_NO_REARM
			/* startLocked reads the clock again (lingerLocked): foldWait
			   may have ended since takeLocked read it */
			if
			:: qlen > 0 && !aged -> aged = 1
			:: true
			fi;
			startLocked(0); /* arms the timer for lingering deletes */
#endif
			if
			:: st ->
				st = 0;
#ifdef STRANDED
				/* `_ = q.startLocked(false)`: running set, no goroutine */
				wactive = 0;
				goto end_idle
#else
				printf("cover: foldWait over between takeLocked and startLocked: the next batch\n")
#endif
			:: else -> wactive = 0; goto end_idle
			fi
		:: else -> /* takeLocked: whole writes from the head */
			n = 0;
			ops = 0;
			if
			:: refused[q[0]] >= APART -> /* takeApartLocked: from the writes at the head that go apart, one per path */
				apart = 1;
				i = 0;
				j = 0;
				seen = 0;
				do
				:: i < qlen && refused[q[i]] >= APART ->
					w = q[i];
#ifndef MUTANT_APART_ANY_PATH
					if
					:: !(seen & (1 << LK(w))) -> batch[blen] = w; blen++
					:: else -> q[j] = w; j++; printf("cover: a second write of a path kept for the next round\n")
					fi;
					seen = seen | (1 << LK(w));
#else
					batch[blen] = w; blen++; /* not one per path */
#endif
					i++
				:: else -> break
				od;
				do /* the queue closes up behind what was taken */
				:: i < qlen -> q[j] = q[i]; j++; i++
				:: else -> break
				od;
				i = j;
				do
				:: i < qlen -> q[i] = 0; i++
				:: else -> break
				od;
				qlen = j;
				seen = 0;
				printf("cover: writes sent apart\n")
			:: else ->
				do
				:: n < qlen && refused[q[n]] < APART && (n == 0 || ops + OPS(q[n]) <= MAXOPS) -> ops = ops + OPS(q[n]); n++
				:: n < qlen && n > 0 && refused[q[n]] < APART && ops + OPS(q[n]) > MAXOPS -> printf("cover: a batch bounded\n"); break
				:: n == qlen || (n > 0 && refused[q[n]] >= APART) -> break
				od
			fi;
#ifdef MUTANT_CREATE_BEFORE_DELETE
			/* createsAhead: a batch with a create takes its creates (and
			   transactions) and leaves its deletes at the head */
			i = 0;
			do
			:: i < n && KIND(q[i]) == DEL -> i++
			:: else -> break
			od;
			if
			:: i < n && n > 1 ->
				j = 0;
				i = 0;
				do
				:: i < n ->
					if
					:: KIND(q[i]) != DEL -> batch[blen] = q[i]; blen++
					:: else -> q[j] = q[i]; j++
					fi;
					i++
				:: else -> break
				od;
				do
				:: i < qlen -> q[j] = q[i]; j++; i++
				:: else -> break
				od;
				i = j;
				do
				:: i < qlen -> q[i] = 0; i++
				:: else -> break
				od;
				qlen = j
			:: else
			fi;
#endif
			if
			:: blen == 0 ->
				i = 0;
				do
				:: i < n -> batch[i] = q[i]; i++
				:: else -> break
				od;
				blen = n;
				i = 0;
				do
				:: i + n < qlen -> q[i] = q[i + n]; i++
				:: else -> break
				od;
				do
				:: i < qlen -> q[i] = 0; i++
				:: else -> break
				od;
				qlen = qlen - n
			:: else
			fi;
			aged = 0; /* a new head */
			i = 0;
			do
			:: i < blen ->
				w = batch[i];
				taken[w] = 1;
				if
				:: KIND(w) != DEL -> nnd--
				:: else
				fi;
				/* send: on the wire, the tap closes each w.sent */
				if
				:: KIND(w) == CRE && cst[LK(w)] == 1 -> cst[LK(w)] = 2
				:: else
				fi;
				i++
			:: else -> break
			od;
			onWire(RQ_WR);
			/* coverage, checked by model_test.go (mustReach) */
			if
			:: !apart && blen > 1 && KIND(batch[0]) == CRE && KIND(batch[1]) == CRE -> printf("cover: two paths' creates in one request\n")
			:: !apart && blen > 1 && KIND(batch[0]) == DEL && KIND(batch[1]) == CRE && LK(batch[0]) != LK(batch[1]) ->
				printf("cover: a create with the other path's delete\n")
			:: else
			fi;
			i = 0; n = 0; ops = 0; w = 0
		fi
	   };
		if
		:: blen > 0 ->
			atomic { /* the answer: settle */
				wans ->
				wans = 0;
				n = 0; /* the writes that go again, compacted at batch[0..n) */
				i = 0;
				do
				:: i < blen && apart -> /* each its own request: its own answer */
					w = batch[i];
					refop = (bfail[i] -> w : refop);
					finish(w, !bfail[i]);
					bfail[i] = 0;
					i++
				:: i < blen && !apart ->
					w = batch[i];
					if
					:: failat == 0 -> finish(w, 1)
					:: failat == i + 1 -> finish(w, 0) /* settleOne: its own op */
					:: failat != 0 && failat != i + 1 ->
#ifdef MUTANT_FAIL_WHOLE_BATCH
						finish(w, 0)
#else
						batch[n] = w; n++ /* again */
#endif
					fi;
					i++
				:: else -> break
				od;
				/* requeue: back at the head, in order, ahead of what
				   was queued since */
				if
				:: n > 0 ->
					assert(qlen + n <= QN);
					i = qlen;
					do
					:: i > 0 -> q[i - 1 + n] = q[i - 1]; i--
					:: else -> break
					od;
					do
					:: i < n ->
						w = batch[i];
						q[i] = w;
						taken[w] = 0;
						refused[w] = (refused[w] < APART -> refused[w] + 1 : APART); /* together next, apart from APART on */
						if
						:: KIND(w) == CRE -> nnd++; printf("cover: a create put back\n")
						:: KIND(w) == TX -> nnd++; printf("cover: a transaction put back\n")
						:: KIND(w) == DEL -> printf("cover: a delete put back\n")
						fi;
						i++
					:: else -> break
					od;
					qlen = qlen + n
				:: else
				fi;
				i = 0;
				do
				:: i < blen -> batch[i] = 0; i++
				:: else -> break
				od;
				blen = 0; failat = 0; refop = 0; apart = 0;
				i = 0; j = 0; n = 0; w = 0
			}
		:: else
		fi
	od
}

proctype clock() {
end:
	do
	:: atomic { qlen > 0 && nnd == 0 && !aged -> aged = 1 } /* foldWait passes */
	:: atomic { /* the timer fires: wake */
		armed && aged ->
		armed = 0;
		startLocked(0);
		if
		:: st -> wgo = 1; st = 0
		:: else
		fi
	   }
	od
}

proctype server() {
	byte i, j, l, r, w;
end:
	do
	:: atomic { /* the batch on the wire (the session's one write request) */
		blen > 0 && !bapplied && !wans ->
		bapplied = 1;
		/* the first op that fails, if one does; apart, each write on its
		   own (each its own request: they fail or apply one by one, in
		   either order: the two requests race) */
		if
		:: apart && blen == 2 -> w = batch[0]; batch[0] = batch[1]; batch[1] = w; w = 0; printf("cover: apart, in the other order\n")
		:: true
		fi;
		i = 0;
		do
		:: i < blen && apart ->
			w = batch[i];
			l = LK(w);
			if
			:: KIND(w) == CRE && !parent[l] -> bfail[i] = 1
			:: KIND(w) == DEL && !rel[l] -> bfail[i] = 1
			:: KIND(w) == TX && nf < F && l == 0 -> nf++; bfail[i] = 1
			:: else ->
				if
				:: KIND(w) == CRE -> nodes[l]++; assert(nodes[l] <= 1) /* (a) */
				:: KIND(w) == DEL -> nodes[l]--; rel[l] = 0
				:: KIND(w) == TX
				fi
			fi;
			i++
		:: i < blen && !apart && failat == 0 ->
			w = batch[i];
			l = LK(w);
			if
			:: KIND(w) == CRE ->
				if
				:: !parent[l] -> failat = i + 1; printf("cover: a create refused, NoNode\n")
				:: else
				fi
			:: KIND(w) == DEL ->
				if
				:: !rel[l] -> failat = i + 1; printf("cover: a delete refused, NoNode\n")
				:: else
				fi
			:: KIND(w) == TX ->
				if
				:: nf < F && l == 0 -> nf++; failat = i + 1; printf("cover: a transaction refused, stale\n")
				:: true
				fi
			fi;
			i++
		:: else -> break
		od;
		if
		:: apart -> skip
		:: !apart && failat == 0 -> /* applied, whole, in op order */
			i = 0;
			do
			:: i < blen ->
				w = batch[i];
				l = LK(w);
				if
				:: KIND(w) == CRE -> nodes[l]++; assert(nodes[l] <= 1) /* (a), op by op */
				:: KIND(w) == DEL -> nodes[l]--; rel[l] = 0
				:: KIND(w) == TX
				fi;
				i++
			:: else -> break
			od
		:: !apart && failat != 0 -> refop = batch[failat - 1] /* refused, nothing applied */
		fi;
		i = 0; l = 0; w = 0
	   }
	:: atomic { /* the oldest answer */
		wlen > 0 && (wire[0] != RQ_WR || bapplied) ->
		r = wire[0];
		i = 0;
		do
		:: i + 1 < wlen -> wire[i] = wire[i + 1]; i++
		:: else -> break
		od;
		wlen--;
		wire[wlen] = 0;
		if
		:: r == RQ_WR -> wans = 1; bapplied = 0
		:: r == RQ_RD -> release(1); rdone = 1
		:: r == RQ_LST(0) -> release(1); listed[0] = 1
		:: r == RQ_LST(1) -> release(1); listed[1] = 1
		fi;
		i = 0; r = 0
	   }
	/* the environment's faults, on path p: the locks are alike (the
	   model is the same with their names swapped), so a fault on p
	   stands for either's */
	:: atomic { nf < F && rel[0] -> nf++; rel[0] = 0; nodes[0]-- } /* an operator deletes a released node */
	:: atomic { nf < F && parent[0] && nodes[0] == 0 -> nf++; parent[0] = 0 } /* an empty container removed */
	od
}

/* (d), checked in every state; and the bound's count. */
#define STRANDED_Q (qlen > 0 && !wgo && !wactive && !armed)
proctype monitor() {
end:
	atomic {
		STRANDED_Q || fn > SIZE -> assert(!STRANDED_Q && fn <= SIZE)
	}
}

init {
	atomic {
		nodes[0] = 1; nodes[1] = 1;
		parent[0] = 1; parent[1] = 1;
		run monitor();
		run server();
		run clock();
		run writer();
		run lock(0);
		run lock(1);
		run reader()
	}
}

#define PENDC(l) (cst[l] == 1 || cst[l] == 2)
ltl live {
	[] ((rel[0] -> <> !rel[0]) && (rel[1] -> <> !rel[1]) &&
	    (PENDC(0) -> <> !PENDC(0)) && (PENDC(1) -> <> !PENDC(1)) &&
	    ((tst[0] == 1) -> <> (tst[0] != 1)) && ((tst[1] == 1) -> <> (tst[1] != 1)))
}
