/*
 * Model 2: the two-tier protocol, P processes x G goroutines on one lock
 * path.
 *
 * Per process p:
 *   - the gate (tier 1), abstracted as a correct mutex that can hand the
 *     gate straight to a local waiter (Model 1 checks the real gate);
 *   - the tier lock's state (zkHeld, hand-off count) and the zklock's
 *     (the node of the current acquisition or hold, its loss);
 *   - the session: its lease (the client's trust in its view), the
 *     server's expiry of it, its FIFO wire to the server, the pending
 *     delete of a release and the guaranteed (retried) deletes.
 * The server (one step per request, taken from a session's wire in order)
 * keeps the ephemeral-sequential nodes: node n is the n-th created, so n
 * is its sequence number and its creation zxid (the fencing token).
 *
 * Time is modelled as an order of events. lapse(p) (lost connectivity,
 * any time, at most F times in all) invalidates p's lease and, in the same
 * step, cancels p's holds: the code's timing argument (the held context is
 * cancelled at most B after the last successful round trip through the
 * leader, B < session timeout - slack) is what makes this order real; it is
 * argued in prose in zklock, not here. expire(p) is enabled only while p's
 * lease is lapsed. Requests written when the connection dies are applied
 * or not, and their callers get an error; requests sent while the
 * connection is down wait for the next one (possibly in a new session).
 * A reply that arrived is read before the connection can die again
 * (reading it takes no time), so lapse waits while a "you are first"
 * reply is unread.
 *
 * Properties:
 *   - mutual exclusion among holders whose hold is valid (held context not
 *     cancelled): assert(nvalid == 0) whenever a hold becomes valid;
 *   - fencing: the token of each valid hold is greater than the previous
 *     valid holder's, equal only for a local hand-off of the same node;
 *   - no orphan (monitor): every node of a live session belongs to an
 *     acquisition that creates, waits or holds, or to a delete that is
 *     pending, on the wire or to be retried;
 *   - no deadlock: no invalid end state (pan's default) and no cycle
 *     without progress (pan -l, compiled with -DNP): the periodic re-check
 *     of a waiter fires only when nothing else can move (spin's timeout),
 *     so a waiter stuck behind a node that never goes away loops there.
 *
 * Mutants:
 *   -DMUTANT_FORGET_FAILED_DELETE  a delete that meets a connection loss
 *       is not retried: its node stays (orphan), its session's next
 *       acquisition and everyone else wait behind it forever;
 *   -DMUTANT_NO_LOSS_SIGNAL  the holder never learns that its lease
 *       lapsed or its session expired: after the expiry another process
 *       acquires while it still holds.
 */

#ifndef P
#define P 2     /* processes (sessions) */
#endif
#ifndef G
#define G 2     /* goroutines per process */
#endif
#ifndef R
#define R 1     /* acquisitions per goroutine */
#endif
#ifndef K
#define K 1     /* bounded local hand-off: hand-offs per node */
#endif
#ifndef F
#define F 1     /* lease lapses (connection losses) in all */
#endif
#ifndef C
#define C 1     /* cancelled waits in all */
#endif
#define MAXN 8  /* nodes ever created: sequence numbers 0..MAXN-1 */
#define WIRE 4  /* requests on one session's wire */
#define NGUID 4 /* distinct GUIDs per process */

#if P > 3 || MAXN > 8
#error the orphan invariant below is spelled out for P <= 3 and MAXN == 8
#endif

/* byte codes: node numbers are 0..MAXN-1 */
#define NONE   255
#define PEND   254 /* no reply yet */
#define ERR    253 /* connection lost: the request may or may not have been applied */
#define NONODE 252 /* multi: the node to delete is gone; getW: no such node */
#define GONE   251 /* listing: our node is not there */
#define FIRST  250 /* listing: our node is the lowest */
#define OK     249

/* zklock state of a process's current acquisition */
#define IDLE     0
#define CREATING 1 /* create sent, our node's name not known yet */
#define QUEUED   2 /* our node is known, not first */
#define HELD     3

#define BIT(n) (1 << (n))

mtype = { DEL, CRE, MULTI, LIST, GETW };

/* the server */
byte nowner[MAXN]; /* 0: no such node (never created or deleted); p+1: ephemeral node of p */
byte nguid[MAXN];  /* GUID in the node's name */
byte nseq;         /* next sequence number */
byte watch[P];     /* node p's waiter has a data watch on, or NONE */
bool expired[P];   /* the server expired p's session; p has not reconnected yet */

/* per session */
chan wire[P] = [WIRE] of { mtype, byte, byte };
bool lease[P];     /* the client may trust its holds */
bool wev[P];       /* a watch event for p is on its way */
byte pend[P];      /* released node whose delete is not on the wire yet, or NONE */
byte bgdel[P];     /* nodes whose (failed) delete is retried in the background */
byte onwire[P];    /* ghost: nodes with a delete on the wire */
byte faults;

/* replies to the gate holder's requests */
byte rc[P];        /* create or multi: our node, ERR or NONODE */
byte rl[P];        /* listing: FIRST, GONE, ERR or our predecessor */
byte rln[P];       /* listing: our node */
byte rw[P];        /* getW: OK, NONODE or ERR */

/* per process: gate and lock */
byte gate[P];      /* 0 free, else g+1 of the goroutine past it */
bool gw[P * G];    /* waiting at the gate */
bool zkHeld[P];    /* tier: the node is ours, kept across local hand-offs */
byte handoffs[P];
byte zst[P];       /* zklock: IDLE, CREATING, QUEUED, HELD */
byte znode[P];     /* zklock: our node, or NONE */
byte guid[P];      /* zklock: GUID of the current attempt */
byte stale[P];     /* zklock: released node an enqueue sends in its multi */
bool hlost[P];     /* zklock: the hold's Lost channel is closed */

/* ghost: who holds */
bool valid[P * G]; /* the goroutine holds and its held context is not cancelled */
byte nvalid;
byte lasttok = NONE;
byte cancels;

/* queueDelete(node): the previous pending delete, if unsent, is retried in
 * the background. */
inline queueDelete(q, n) {
	if
	:: pend[q] != NONE -> bgdel[q] = bgdel[q] | BIT(pend[q])
	:: else
	fi;
	pend[q] = n
}

/* the server deletes node n and fires the data watches on it */
inline delnode(n) {
	nowner[n] = 0;
	k = 0;
	do
	:: k < P ->
		if
		:: watch[k] == n -> watch[k] = NONE; wev[k] = 1
		:: else
		fi;
		k++
	:: else -> k = 0; break
	od
}

inline mknode(q, id) {
	assert(nseq < MAXN);
	k = 0;
	do
	:: k < nseq -> assert(nowner[k] != q + 1 || nguid[k] != id); k++
	:: else -> k = 0; break
	od;
	nowner[nseq] = q + 1;
	nguid[nseq] = id;
	rc[q] = nseq;
	nseq++
}

/* The server applies one request of session q. */
inline apply(q, op, a, b) {
	if
	:: op == DEL ->
		onwire[q] = onwire[q] & ~BIT(a);
		if
		:: nowner[a] != 0 -> delnode(a)
		:: else /* NoNode: done too */
		fi
	:: op == CRE -> mknode(q, b)
	:: op == MULTI -> /* delete the released node and create ours, or neither */
		onwire[q] = onwire[q] & ~BIT(a);
		if
		:: nowner[a] != 0 -> delnode(a); mknode(q, b)
		:: else -> rc[q] = NONODE
		fi
	:: op == LIST -> /* the children, seen from our node (found by GUID) */
		rln[q] = NONE;
		k = 0;
		do
		:: k < nseq && (nowner[k] != q + 1 || nguid[k] != b) -> k++
		:: k < nseq && nowner[k] == q + 1 && nguid[k] == b -> rln[q] = k; break
		:: else -> break
		od;
		if
		:: rln[q] == NONE -> rl[q] = GONE
		:: else ->
			rl[q] = FIRST;
			do
			:: k > 0 ->
				k--;
				if
				:: nowner[k] != 0 -> rl[q] = k; break
				:: else
				fi
			:: else -> break
			od
		fi;
		k = 0
	:: op == GETW ->
		if
		:: nowner[a] != 0 -> watch[q] = a; rw[q] = OK
		:: else -> rw[q] = NONODE
		fi
	fi
}

/* The caller of a request that was on the wire when the connection died
 * gets an error. */
inline failed(q, op, a) {
	if
	:: op == DEL ->
		onwire[q] = onwire[q] & ~BIT(a);
#ifndef MUTANT_FORGET_FAILED_DELETE
		if
		:: nowner[a] != 0 -> bgdel[q] = bgdel[q] | BIT(a) /* guaranteed delete: retry */
		:: else
		fi
#endif
	:: op == CRE -> rc[q] = ERR
	:: op == MULTI -> onwire[q] = onwire[q] & ~BIT(a); rc[q] = ERR
	:: op == LIST -> rl[q] = ERR
	:: op == GETW -> rw[q] = ERR
	fi
}

/* A goroutine's hold becomes valid (unless already lost). */
inline become(viaHandoff) {
	if
	:: !hlost[p] ->
		assert(nvalid == 0); /* mutual exclusion among valid holders */
		/* fencing: tokens increase; equal only for a local hand-off */
		assert(lasttok == NONE || znode[p] > lasttok || (viaHandoff && znode[p] == lasttok));
		lasttok = znode[p];
		nvalid++;
		valid[me] = 1
	:: else
	fi
}

/* Every session's environment: the server's side of it (apply, expire),
 * connectivity (lapse, reconnect) and the client's background work (flush
 * the pending delete, retry failed deletes, lose watch events). */
proctype session(byte p) {
	mtype op;
	byte a, b, k, n;
end:
	do
	:: atomic {
		lease[p] && nempty(wire[p]) ->
		wire[p]?op,a,b;
		apply(p, op, a, b);
		op = 0; a = 0; b = 0
	}
	:: atomic {
		!lease[p] && !expired[p] ->
		expired[p] = 1;
		n = 0;
		do
		:: n < nseq ->
			if
			:: nowner[n] == p + 1 -> delnode(n)
			:: else
			fi;
			n++
		:: else -> n = 0; break
		od;
		if
		:: watch[p] != NONE -> watch[p] = NONE; wev[p] = 1 /* EventNotWatching */
		:: else
		fi
	}
	:: atomic {
		lease[p] && faults < F && rl[p] != FIRST ->
		lease[p] = 0;
		faults++;
		n = len(wire[p]);
		do
		:: n > 0 ->
			wire[p]?op,a,b;
			if
			:: op == CRE || op == MULTI || op == DEL ->
				if
				:: apply(p, op, a, b) /* applied, the reply lost */
				:: skip               /* lost on the way */
				fi
			:: else /* a read: whether it ran does not matter */
			fi;
			failed(p, op, a);
			n--
		:: else -> break
		od;
		op = 0; a = 0; b = 0;
#ifndef MUTANT_NO_LOSS_SIGNAL
		/* the hold is lost: its node goes through the pending delete
		 * (dropNode), its holders' contexts are cancelled */
		if
		:: zst[p] == HELD && !hlost[p] ->
			hlost[p] = 1;
			queueDelete(p, znode[p]);
			n = 0;
			do
			:: n < G ->
				if
				:: valid[p * G + n] -> valid[p * G + n] = 0; nvalid--
				:: else
				fi;
				n++
			:: else -> n = 0; break
			od
		:: else
		fi
#endif
	}
	:: atomic {
		!lease[p] -> /* reconnect: same session, or a new one after expiry */
		lease[p] = 1;
		expired[p] = 0
	}
	:: atomic {
		pend[p] != NONE && nfull(wire[p]) -> /* flushPending */
		wire[p]!DEL,pend[p],0;
		onwire[p] = onwire[p] | BIT(pend[p]);
		pend[p] = NONE
	}
	:: atomic {
		bgdel[p] != 0 && nfull(wire[p]) -> /* deleteNow's retry */
		n = 0;
		do
		:: bgdel[p] & BIT(n) -> break
		:: else -> n++
		od;
		bgdel[p] = bgdel[p] & ~BIT(n);
		wire[p]!DEL,n,0;
		onwire[p] = onwire[p] | BIT(n);
		n = 0
	}
	:: atomic { wev[p] -> wev[p] = 0 } /* a watch event is lost */
	od
}

proctype goroutine(byte p; byte g) {
	byte me = p * G + g;
	byte r;      /* rounds done */
	byte x;      /* a reply */
	bit mayExist;
	byte k;

round:
	if
	:: r == R -> goto done
	:: else
	fi;
	atomic { /* gate enter; blocks here while another goroutine is past the gate */
		gw[me] = 1;
		(gate[p] == 0 || gate[p] == g + 1) -> gate[p] = g + 1; gw[me] = 0
	};
	if
	:: atomic { zkHeld[p] && !hlost[p] -> handoffs[p]++; become(1) };
		goto holding
	:: atomic { zkHeld[p] && hlost[p] -> /* lost between holders: dropZK */
		zkHeld[p] = 0; zst[p] = IDLE; znode[p] = NONE; hlost[p] = 0 }
	:: else
	fi;

acquire: /* zklock attempt: enqueue */
	atomic {
		stale[p] = pend[p]; /* takePending */
		pend[p] = NONE;
		guid[p] = (guid[p] + 1) % NGUID;
		zst[p] = CREATING;
		mayExist = 0
	};
create:
	if
	:: mayExist -> /* protection mode: look for our GUID before creating again */
		rl[p] = PEND;
		wire[p]!LIST,0,guid[p];
		atomic { rl[p] != PEND -> x = rl[p]; rl[p] = PEND };
		if
		:: x == ERR -> goto create
		:: x == GONE -> mayExist = 0
		:: else ->
			d_step {
				znode[p] = rln[p];
				zst[p] = QUEUED;
				if
				:: stale[p] != NONE -> bgdel[p] = bgdel[p] | BIT(stale[p]); stale[p] = NONE
				:: else
				fi;
				x = GONE /* no listing: list in waitTurn */
			};
			goto wait
		fi
	:: else
	fi;
	d_step { rc[p] = PEND; rl[p] = PEND };
	atomic { /* the create (or multi), and the listing pipelined behind it */
		if
		:: stale[p] != NONE ->
			wire[p]!MULTI,stale[p],guid[p];
			onwire[p] = onwire[p] | BIT(stale[p])
		:: else -> wire[p]!CRE,0,guid[p]
		fi;
		wire[p]!LIST,0,guid[p]
	};
	rc[p] != PEND;
	if
	:: rc[p] == NONODE -> /* the released node is gone: create alone */
		d_step { stale[p] = NONE; rc[p] = PEND };
		wire[p]!CRE,0,guid[p];
		rc[p] != PEND
	:: else
	fi;
	atomic {
		rl[p] != PEND ->
		if
		:: rc[p] == ERR -> mayExist = 1; x = ERR
		:: else ->
			znode[p] = rc[p];
			zst[p] = QUEUED;
			x = rl[p];
			stale[p] = NONE /* the multi deleted it */
		fi;
		rc[p] = PEND;
		if
		:: x != FIRST -> rl[p] = PEND
		:: else /* kept until lead reads it */
		fi
	};
	if
	:: x == ERR && zst[p] == CREATING -> goto create
	:: else
	fi;
	d_step { /* enqueue returns: a stale node the multi did not take is deleted alone */
		if
		:: stale[p] != NONE -> bgdel[p] = bgdel[p] | BIT(stale[p]); stale[p] = NONE
		:: else
		fi
	};

wait: /* x: the first listing, or GONE/ERR to list again */
	if
	:: x == FIRST -> goto lead
	:: x < MAXN -> goto watchpred
	:: else
	fi;
list:
	rl[p] = PEND;
	wire[p]!LIST,0,guid[p];
	if
	:: rl[p] == FIRST -> goto lead
	:: atomic { rl[p] != PEND && rl[p] != FIRST -> x = rl[p]; rl[p] = PEND }
	fi;
	if
	:: x == GONE -> /* our node vanished while queued: queue again */
		d_step { zst[p] = IDLE; znode[p] = NONE; x = 0 };
		goto acquire
	:: x == ERR -> goto list
	:: else
	fi;
watchpred:
	rw[p] = PEND;
	wire[p]!GETW,x,0;
	atomic {
		rw[p] != PEND ->
		if
		:: rw[p] == OK -> x = 0
		:: else -> x = 1
		fi;
		rw[p] = PEND
	};
	if
	:: x -> x = 0; goto list /* predecessor gone: look again at once; or retry */
	:: else
	fi;
	if
	:: atomic { wev[p] -> wev[p] = 0; x = 0 }; goto list
	:: atomic { watch[p] == NONE && !wev[p] -> x = 0 }; goto list
		/* the periodic re-check, which matters only once the watch is
		 * gone and its event lost: while the watch stands the listing
		 * would find the same predecessor */
	:: atomic { cancels < C -> cancels++; x = 0 }; /* ctx ends: delete our node, leave the gate */
		d_step { queueDelete(p, znode[p]); znode[p] = NONE; zst[p] = IDLE };
		gate[p] = 0;
		goto next
	fi;

lead: /* reading the "first" reply and install happen at once */
	atomic {
		rl[p] = PEND;
		x = 0;
		zst[p] = HELD;
		hlost[p] = 0;
#ifndef MUTANT_NO_LOSS_SIGNAL
		if
		:: !lease[p] -> hlost[p] = 1; queueDelete(p, znode[p])
		:: else
		fi;
#endif
		zkHeld[p] = 1;
		handoffs[p] = 0;
		become(0)
	};

holding: /* the critical section */
	atomic {
		if
		:: valid[me] -> valid[me] = 0; nvalid-- /* Release cancels the held context */
		:: else
		fi
	};
	d_step { /* the first local waiter, if any */
		k = 0;
		do
		:: k < G && !gw[p * G + k] -> k++
		:: else -> break
		od
	};
	if
	:: atomic { /* bounded local hand-off: keep the node, pass the gate */
		k < G && K > handoffs[p] && zkHeld[p] && !hlost[p] ->
		gate[p] = k + 1;
		k = 0
	};
		goto next
	:: k = 0 /* no hand-off (no local waiter, count or time limit reached, or lost) */
	fi;
	d_step {
		if
		:: zkHeld[p] ->
			zkHeld[p] = 0;
			if
			:: !hlost[p] -> queueDelete(p, znode[p]) /* Release: the delete is not awaited */
			:: else /* a lost hold's node was queued for deletion when it was lost */
			fi;
			zst[p] = IDLE;
			znode[p] = NONE;
			hlost[p] = 0
		:: else
		fi
	};
	gate[p] = 0;
next:
progress:
	r++;
	goto round;
done:
	skip
}

init {
	byte i, j;
	atomic {
		do
		:: i < P ->
			lease[i] = 1;
			pend[i] = NONE;
			stale[i] = NONE;
			znode[i] = NONE;
			watch[i] = NONE;
			rc[i] = PEND;
			rl[i] = PEND;
			rw[i] = PEND;
			run session(i);
			j = 0;
			do
			:: j < G -> run goroutine(i, j); j++
			:: else -> break
			od;
			i++
		:: else -> break
		od
	}
}

/* no orphan: a live node of p is known to p's lock or session */
#define REF(q, n) ((zst[q] != IDLE && znode[q] == n) || pend[q] == n || stale[q] == n || \
	(bgdel[q] & BIT(n)) || (onwire[q] & BIT(n)) || \
	(zst[q] == CREATING && nguid[n] == guid[q]))
#define ORPHAN(q, n) (nowner[n] == (q) + 1 && !REF(q, n))
#define ORPHANS(q) (ORPHAN(q, 0) || ORPHAN(q, 1) || ORPHAN(q, 2) || ORPHAN(q, 3) || \
	ORPHAN(q, 4) || ORPHAN(q, 5) || ORPHAN(q, 6) || ORPHAN(q, 7))
#if P == 1
#define ANYORPHAN ORPHANS(0)
#elif P == 2
#define ANYORPHAN (ORPHANS(0) || ORPHANS(1))
#else
#define ANYORPHAN (ORPHANS(0) || ORPHANS(1) || ORPHANS(2))
#endif

active proctype monitor() {
end:	atomic { (ANYORPHAN || nvalid > 1) -> assert(false) }
}
