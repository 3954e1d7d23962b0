/*
 * Model 5: a session's pending deletes and its bound on requests in
 * flight (zklock/deletes.go, create.go, send.go).
 *
 * One session, three goroutines that send through its bound, the flusher,
 * and the ZooKeeper server that applies the session's requests:
 *
 *   lock(0), lock(1)  a Lock on path p (0) and one on path q (1), each
 *            looping: it holds a node on its path (the model starts with
 *            both held), releases it (deleteQueue.add), acquires again
 *            (Lock.enqueue, createAndList: admission for the create and
 *            the listing pipelined behind it, the path's pending delete
 *            taken or waited for, or another path's taken, the create or
 *            the multi {create new, delete old} on the wire, deleteQueue.sent),
 *            waits for the answer, holds, releases... Each is the other's
 *            backlog: q's create in flight keeps p's acquisition queued.
 *   reader   a waiter's read (s.call: a listing or getW, one place),
 *            looping: the bound's other kind of occupant.
 *   flusher  deleteQueue.flush, run by its timer "foldWait after a release":
 *            enabled whenever a delete is pending and untaken; it marks
 *            every such delete sent (under dels.mu), writes them
 *            (deleteQueue.send: one request, a delete or a multi of deletes,
 *            exempt from the bound) and calls deleteQueue.sent on each.
 *   server   applies the session's requests in the order they were
 *            written (ZooKeeper is FIFO per session); a multi is applied
 *            in one step.
 *   network  returns the answers, in order, as late as it likes: its
 *            answer step may be put off for ever (skip) while one is due.
 *            An answer frees the request's places in the bound
 *            (Session.make's flight.release, then wakeLocked) and wakes
 *            its caller (c.fin); the flusher's answers free nothing.
 *
 * The bound (inflight.acquire, release, wakeLocked): SIZE places (2),
 * fn taken, FIFO queue fq of waiting goroutines; a lock's create and
 * listing take 2 places together (admitted and freed together here: the
 * listing's answer follows the create's), the reader 1. A request is
 * admitted at once only when it fits and nobody waits.
 *
 * The deletes (Session.dels): dstate[x] for the Lock on path x,
 *   0  byPath[x] == nil: no delete of x's node unsent;
 *   1  pending: queued (deleteQueue.add), not taken (d.sent == nil, in order,
 *      counted in untaken: the flusher will send it);
 *   2  taken (d.sent != nil), not yet on the wire: by a create of the
 *      path (takeDelete), of the other path (takeOther), or by the
 *      flusher; dtaker[x] says which (ghost). deleteQueue.sent, once the
 *      request carrying it is on the wire, sets it back to 0.
 *
 * Ghost variables:
 *   nodes[x]    the session's nodes on path x at the server;
 *   waitdel[x]  x's released node is not yet deleted at the server (set
 *               by deleteQueue.add, cleared when the server applies the
 *               request carrying its delete);
 *   queued[i]   goroutine i waits in inflight.acquire (in f.queue, its
 *               ready not closed); the model's "ready" is !queued[i].
 *
 * Properties:
 *   (a) one node per path: the server never holds two nodes of the
 *       session on one path, i.e. a create on x is never applied before
 *       the delete of x's released node (asserted as each request is
 *       applied);
 *   (b) a released node's delete is never held by a create waiting for
 *       admission (monitor, every state): while not on the wire it is
 *       pending (the flusher, exempt, will send it), or held by the
 *       flusher, or by a create already admitted, so its way to the
 *       server passes no admission and no answer of another request;
 *   ltl deleted: [](waitdel[x] -> <> !waitdel[x]) for x = p, q, under
 *       weak fairness, with answers that may never come (network): every
 *       released node is deleted at the server even when the bound's
 *       occupants stay in flight for ever (a slow server). The same
 *       property as (b), stated as what it is for;
 *   no invalid end state (deadlock): the locks and the reader loop for
 *       ever; the server, the network and the flusher may idle.
 *
 * Abstracted: the flusher's timer (armed by deleteQueue.add, stopped by
 * takenLocked only when no delete is left untaken) is "enabled while a
 * delete is pending and untaken"; one flusher run at a time (the code's
 * runs can overlap only on deletes of different paths, whose order
 * matters to nothing here); the listing is folded into the create (2
 * places, one answer); the bound's limit is fixed (no adaptation); no
 * context ends, no TryAcquire, no faults (no failed multi, no NoNode
 * fallback, no retried delete: Model 2 has those); waitTurn and the grant
 * need no request (the other processes on the paths are not modelled:
 * what they wait for is the released node's delete, waitdel).
 *
 * Mutants:
 *   MUTANT_TAKE_BEFORE_ADMISSION  Lock.enqueue before the fix: takeDelete
 *       (take the path's delete, or wait until it is on the wire), then
 *       createAndList's flight.acquire. The taken delete waits behind the
 *       session's admission queue, the flusher skips it: (b) fails, and
 *       with -A the liveness claim (the released node stays while the
 *       bound's occupants are not answered).
 *   MUTANT_NO_WAIT_SENT  the fixed order, but a create finding its
 *       path's delete taken (sent != nil) does not wait until it is on the
 *       wire: its create can overtake the delete, and (a) fails.
 */

#ifndef SIZE
#define SIZE 2 /* places in the bound (the code's limit: 16-2048); 4 lets both creates fly */
#endif
#define RD 2   /* the reader's number (the locks are 0 and 1, by path) */
#define FL 3   /* the flusher's, as a taker of deletes */
#define NONE 2 /* a request that creates no node (a delete, a read) */
#define W(i) ((i) == RD -> 1 : 2)
#define MAXQ 6 /* requests written and not yet answered (write asserts room; 3 at most seen) */

/* inflight */
byte fn;       /* f.n */
byte fq[3];    /* f.queue, oldest first */
byte fqlen;
bool queued[4]; /* in f.queue (ready open); [FL] unused, always 0 */

/* Session.dels */
byte dstate[2];
byte dtaker[2];

/* the session's requests written and not yet answered, in order; the
   first napplied are applied by the server */
byte rqwho[MAXQ];
byte rqcre[MAXQ]; /* the path created, or NONE */
byte rqdel[MAXQ]; /* the paths whose released node it deletes: bit x */
byte rqlen;
byte napplied;
bool answered[3]; /* c.fin of the goroutine's request */

/* ghost */
byte nodes[2];
bool waitdel[2];

/* (b): x's delete taken by a create that waits for admission */
#define HELDWAITING(x) (dstate[x] == 2 && dtaker[x] != FL && queued[dtaker[x]])

/* A request on the wire (pipelined: the tap saw it written). */
inline write(who, cre, del) {
	assert(rqlen < MAXQ);
	rqwho[rqlen] = who; rqcre[rqlen] = cre; rqdel[rqlen] = del; rqlen++
}

/* deleteQueue.sent for each delete in mask m, taken by who: byPath[x] cleared
   if it is still that delete (a delete queued since, by a release after
   our create overtook it, stays: MUTANT_NO_WAIT_SENT only), sent closed. */
inline deleteSent(m, who) {
	if
	:: (m & 1) && dstate[0] == 2 && dtaker[0] == who -> dstate[0] = 0; dtaker[0] = 0
	:: else
	fi;
	if
	:: (m & 2) && dstate[1] == 2 && dtaker[1] == who -> dstate[1] = 0; dtaker[1] = 0
	:: else
	fi
}

/* inflight.acquire(ctx, W(me), ...): admitted at once, or queued until
   wakeLocked closes our ready. No context ends here (Model 4 checks the
   admission's give-up paths). */
inline acquire() {
	atomic {
		if
		:: fn + W(me) <= SIZE && fqlen == 0 -> fn = fn + W(me)
		:: else -> fq[fqlen] = me; fqlen++; queued[me] = 1
		fi
	};
	!queued[me] /* <-ready */
}

/* wakeLocked: admit from the head while it fits. */
inline wake() {
	do
	:: fqlen > 0 && fn + W(fq[0]) <= SIZE ->
		fn = fn + W(fq[0]); queued[fq[0]] = 0;
		i = 0;
		do
		:: i + 1 < fqlen -> fq[i] = fq[i + 1]; i++
		:: else -> break
		od;
		fqlen--; fq[fqlen] = 0; i = 0
	:: else -> break
	od
}

/* Lock.takeDelete: this path's pending delete, taken into our multi
   (Session.takeDelete, takenLocked), or, when it is taken already (by
   the flusher or by the other path's create), wait on d.sent until it is
   on the wire, and look again. */
inline takeOrWait() {
	do
	:: atomic { dstate[me] == 1 -> dstate[me] = 2; dtaker[me] = me; stale = 1 << me; break }
	:: atomic { dstate[me] == 0 -> break }
	:: atomic { dstate[me] == 2 -> skip };
#ifndef MUTANT_NO_WAIT_SENT
		/* <-inFlight (deleteQueue.sent), then takeDelete again (it finds
		   none: only our own release queues a delete on our path) */
		dstate[me] != 2
#else
		break /* not waiting: our create may go out before the delete */
#endif
	od
}

proctype lock(byte me) {
	byte stale; /* the deletes our create carries: bit x */
	/* Starts holding a node on path me, created before the model starts
	   (so pathKnown holds). */
release: /* Hold.Release -> Session.deleteQueue.add */
	atomic {
		/* our create took or waited for our last delete: none is
		   pending ("cannot happen"), and the server applied it */
		assert(dstate[me] != 1 && !waitdel[me] && nodes[me] == 1);
		dstate[me] = 1; dtaker[me] = 0; waitdel[me] = 1
	};
	/* the next Acquire on the path: attempt -> enqueue */
#ifdef MUTANT_TAKE_BEFORE_ADMISSION
	takeOrWait(); /* enqueue's l.takeDelete, before createAndList */
#endif
	acquire(); /* createAndList: s.flight.acquire(ctx, 2, ...) */
#ifndef MUTANT_TAKE_BEFORE_ADMISSION
	takeOrWait(); /* the fix: admitted first, then the path's delete */
#endif
	atomic { /* stale == nil && pathKnown: s.takeOther() */
		if
		:: stale == 0 && dstate[1 - me] == 1 ->
			dstate[1 - me] = 2; dtaker[1 - me] = me; stale = 1 << (1 - me)
		:: else
		fi
	};
	/* s.pipeline(... l.create(prefix, stale) ...): the create, a multi
	   {create, delete stale} when it carries one, with the listing behind
	   it, on the wire */
	atomic { write(me, me, stale) };
	if
	:: atomic { stale != 0 -> deleteSent(stale, me); stale = 0 } /* s.deleteQueue.sent(stale) */
	:: else
	fi;
	/* <-c.fin (and the listing's answer); waitTurn and the grant, which
	   need no request of the session in this model (no other process),
	   then the hold */
	atomic { answered[me] -> answered[me] = 0 };
	goto release
}

proctype reader() {
	byte me = RD;
end:
	do
	:: acquire(); /* s.call: flight.acquire(ctx, 1, ...) */
		atomic { write(RD, NONE, 0) }; /* launch: the listing or getW */
		atomic { answered[RD] -> answered[RD] = 0 } /* await */
	od
}

proctype flusher() {
	byte batch;
end:
	do
	:: atomic { /* deleteQueue.flush, under dels.mu: every delete not taken */
		dstate[0] == 1 || dstate[1] == 1 ->
		if
		:: dstate[0] == 1 -> dstate[0] = 2; dtaker[0] = FL; batch = 1
		:: else
		fi;
		if
		:: dstate[1] == 1 -> dstate[1] = 2; dtaker[1] = FL; batch = batch | 2
		:: else
		fi
	   };
	   /* deleteQueue.send: pipelined(s.ctx, ..., admitted false): exempt */
	   atomic { write(FL, NONE, batch) };
	   atomic { deleteSent(batch, FL); batch = 0 }
	od
}

proctype server() {
	byte d;
end:
	do
	:: atomic { /* the next request of the session, applied whole */
		napplied < rqlen ->
		d = rqdel[napplied];
		if
		:: d & 1 -> nodes[0]--; waitdel[0] = 0
		:: else
		fi;
		if
		:: d & 2 -> nodes[1]--; waitdel[1] = 0
		:: else
		fi;
		if
		:: rqcre[napplied] != NONE -> nodes[rqcre[napplied]]++
		:: else
		fi;
		napplied++; d = 0;
		assert(nodes[0] <= 1 && nodes[1] <= 1) /* (a) */
	   }
	od
}

proctype network() {
	byte w;
	byte i;
end:
	do
	:: atomic { /* the oldest answer comes back: Session.make's release */
		napplied > 0 ->
		w = rqwho[0];
		if
		:: w != FL -> fn = fn - W(w); answered[w] = 1; wake()
		:: else /* exempt: frees no place, nobody waits for it */
		fi;
		i = 0;
		do
		:: i + 1 < rqlen ->
			rqwho[i] = rqwho[i + 1]; rqcre[i] = rqcre[i + 1]; rqdel[i] = rqdel[i + 1]; i++
		:: else -> break
		od;
		rqlen--; rqwho[rqlen] = 0; rqcre[rqlen] = 0; rqdel[rqlen] = 0;
		napplied--; i = 0; w = 0
	   }
	:: atomic { napplied > 0 -> skip } /* not yet: a slow server, as long as it likes */
	od
}

/* (b), checked in every reachable state. */
proctype monitor() {
end:	atomic {
		HELDWAITING(0) || HELDWAITING(1) -> assert(!(HELDWAITING(0) || HELDWAITING(1)))
	}
}

init {
	atomic {
		nodes[0] = 1; nodes[1] = 1;
		run monitor();
		run server();
		run network();
		run flusher();
		run lock(0);
		run lock(1);
		run reader()
	}
}

ltl deleted { [] ((waitdel[0] -> <> !waitdel[0]) && (waitdel[1] -> <> !waitdel[1])) }
