/*
 * Model 2: the two-tier protocol, P processes x G goroutines on one lock
 * path, and the lease that decides when a session may trust its holds.
 *
 * Per process p:
 *   - the gate (tier 1), abstracted as a correct mutex that can hand the
 *     gate straight to a local waiter (Model 4 checks the real one);
 *   - the tier lock's state (zkHeld, hand-off count) and the zklock's
 *     (the node of the current acquisition or hold, its loss);
 *   - the session: its connection to a server, that server's link to the
 *     leader, the lease (zklock/lease.go), the leader's expiry of the
 *     session, its FIFO wire to the server, the pending delete of a release
 *     and the guaranteed (retried) deletes.
 * The leader (one step per request, taken from a session's wire in order)
 * keeps the ephemeral-sequential nodes: node n is the n-th created, so n
 * is its sequence number and its creation zxid (the fencing token).
 *
 * Faults, at most F in all, met by process 0 (FAULTY: the processes are
 * alike, so process 0's faults stand for anyone's); each kind can be left
 * out, -DDISC=0, -DCUT=0:
 *   - a disconnection (DISC): requests on the wire are applied or not and
 *     their callers get an error; requests sent while disconnected wait for
 *     the next connection, in the same session or, after an expiry, in a
 *     new one. The client knows: under the default policy its holds end;
 *   - p's server cut from the leader (CUT), the client still connected to
 *     it: the server answers p's reads from its own view, frozen when it was
 *     cut; p's writes and syncs, and every request behind them (a session's
 *     requests are answered in order), wait. The cut heals (the waiting
 *     requests go on) while the leader has not expired the session, or the
 *     server drops its clients (syncLimit; or, after the heal, because the
 *     session expired): a disconnection in which a write forwarded before
 *     the cut may have been applied, unless the session expired.
 *
 * The lease. lease[p] is "the deadline lies ahead"; a session starts
 * without one. It is renewed only by the answer of a request that proves
 * the session alive at the leader after the request was sent
 * (Session.proved, counted from the send time):
 *   - a sync (lease.refresh, sent by the renewer or by a grant that finds
 *     the lease stale): one step, enabled while a lock has a node and p's
 *     server is linked to the leader (the leader refuses it once the
 *     session expired, so it never renews an expired session);
 *   - a write of the session's locks that succeeded (send.go make, write):
 *     the create or multi of an acquisition (renewing when its caller reads
 *     the answer) and the flusher's delete of a released node (deleteQueue.send);
 *     the background retries of deleteGuaranteed do not go through run and
 *     renew nothing.
 * Reads (listings, getW) renew nothing. Time is an order of events: the
 * lease lapses at any moment while p is disconnected or cut (lapse(p): its
 * holds end in the same step, lease.lapse), and expire(p), the leader's, is
 * enabled only while p's lease has lapsed and p is disconnected or cut. That
 * order is what the timing argument in zklock/internal/session/lease.go
 * guarantees (holds end 7T/8 after the latest moment the session showed
 * itself the leader heard of it, a connect answer or a chain of proofs
 * around one of the leader's pings, and the leader cannot expire the
 * session before T after it); the rule is argued there, not here. The same
 * argument says that a proof whose answer is read after the expiry renews
 * nothing (its chain needs a later proof, which the expired session's
 * closed connection fails): the create's answer renews only if the session
 * has not expired since the create was applied, and was sent in the
 * current session (the proof's session id). Left out: a lapse while p is
 * connected to a server linked to the leader (a slow round trip), and a
 * proof answered after its window closed for that reason: either only ends
 * holds early or delays a grant, and cannot let the leader expire the
 * session, which hears of it.
 *
 * A grant (grant.go) needs the connection, the lease, and the node's
 * session still the client's (a node created in a session that has since
 * been replaced went with it: errNodeGone, queue again). zsid/sid record
 * the session of p's node and the client's current one, as the code's
 * Hold.owner and conn.SessionID(). The owner is the session the create was
 * applied in: the code reads conn.SessionID() before the create and after
 * its answer, and a change between the two makes the outcome unknown
 * (protection mode reads the node's owner). -DOWNER_AFTER_REPLY is the
 * code before that: the owner read once the create returned, however late
 * (a mutant; see README).
 *
 * Properties:
 *   - mutual exclusion among holders whose hold is valid (held context not
 *     cancelled): assert(nvalid == 0) whenever a hold becomes valid;
 *   - fencing: the token of each valid hold is greater than the previous
 *     valid holder's, equal only for a local hand-off of the same node;
 *   - loss before expiry: when the leader expires a session, none of its
 *     holds is valid (the holders were told: the lease lapsed, or the
 *     connection dropped);
 *   - no orphan (monitor): every node of a live session belongs to an
 *     acquisition that creates, waits or holds, or to a delete that is
 *     pending, on the wire or to be retried;
 *   - no deadlock: no invalid end state.
 *
 * Mutants:
 *   -DMUTANT_FORGET_FAILED_DELETE  a delete that meets a connection loss
 *       is not retried: its node stays (orphan), its session's next
 *       acquisition and everyone else wait behind it forever;
 *   -DMUTANT_NO_LOSS_SIGNAL  the holder never learns that its lease
 *       lapsed or its connection dropped: the leader expires the session
 *       while the hold is valid, and another process can acquire;
 *   -DMUTANT_READ_RENEWS  a read's answer renews the lease: a listing
 *       served by a server cut from the leader, after the leader expired
 *       the session, finds our node first and the lease fresh;
 *   -DMUTANT_RENEW_AFTER_EXPIRY  a create's answer renews the lease from
 *       when it arrives, not from its send: read after the expiry, it makes
 *       the lease of an expired session valid again.
 * -DNOFENCE leaves the fencing assertion out, so that a mutant's trail ends
 * on two valid holders rather than on the stale holder's token.
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
#define F 1     /* faults in all */
#endif
#ifndef DISC
#define DISC 1  /* a fault may be a disconnection */
#endif
#ifndef CUT
#define CUT 1   /* a fault may cut a client's server from the leader */
#endif
#ifndef C
#define C 1     /* cancelled waits in all */
#endif
#ifndef FAULTY
#define FAULTY(p) ((p) == 0) /* who may meet a fault: the processes are alike, so one stands for all */
#endif
#define MAXN 8  /* nodes ever created: sequence numbers 0..MAXN-1 */
#define WIRE 4  /* requests on one session's wire */
#define NGUID 4 /* distinct GUIDs per process */

#if P > 3 || MAXN > 8 || G > 3
#error the orphan invariant and HOLDS are spelled out for P <= 3, G <= 3 and MAXN == 8
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
#define IN(m, n) (((m) >> (n)) & 1)
#define LIVE(n) IN(live, n)

mtype = { DEL, CRE, MULTI, LIST, GETW };

/* -DEMIT: every client step is also printed, as it is taken, as one line of
 * internal/trace's JSONL vocabulary (the kinds and fields a recorded run
 * writes), so that `spin -DEMIT` random simulations give traces that
 * internal/replay, the Go rendering of these transitions, must accept (and
 * a mutant's, reject). Off by default: without it E(...) is empty, and the
 * verification runs have neither these statements nor the ghosts below. */
#ifdef EMIT
mtype = { gate_enter, handoff, gate_pass, gate_leave, send, answer, turn, event,
	renew, lapse, grant, lose, release, del_add, del_take, del_flush, SYNC, handshake };
hidden int et;    /* ghost: the emitted steps' clock, their seq and t */
hidden byte egid[MAXN]; /* ghost: node n's GUID (creator * NGUID + guid), kept after it is deleted */
hidden int ehs[P]; /* ghost: when p's latest connect request was written (its answer's step) */
#define E(x) atomic { x };   /* before a statement (a step of its own outside atomic sequences) */
#define EA(x) ; atomic { x }  /* after one */
#define EH(q, k) printf("{\"seq\":%d,\"t\":%d,\"pid\":1,\"proc\":%d,\"sid\":%d,\"kind\":\"%e\"", et + 1, et, (q) + 1, sid[q] + 1, k); et++
#define EOP(op) printf(",\"op\":\"%e\"", op)
#define EPATH printf(",\"path\":\"/m\"")
#define EPFX(q) printf(",\"path\":\"/m/_c_%d-lock-\"", (q) * NGUID + guid[q])
#define ENODE(n) printf(",\"node\":\"/m/_c_%d-lock-%d\"", egid[n], n)
#define ENPATH(n) printf(",\"path\":\"/m/_c_%d-lock-%d\"", egid[n], n)
#define EOUTCONN printf(",\"out\":\"conn\"")
#define EOUTNONODE printf(",\"out\":\"nonode\"")
#define EEND printf("}\n")
/* the server's answer to q's connect request, read at the wire (as
 * zklock.Connect's tap reads it) before the client takes the session for
 * its own: the session s it granted, the session timeout, T = 4000000
 * (internal/replay derives the lease's reach, 7T/8, from it), and when the
 * request was written, which the answer shows the leader touched s after */
#define EHANDSHAKE(q, s) ehs[q] = et; EH(q, handshake); printf(",\"owner\":%d,\"timeout\":4000000,\"at\":%d,\"note\":\"wire\"}\n", (s) + 1, ehs[q])
/* a renew of session q's current id, counted from a touch at the leader
 * written at time at: the model's time is an order, and the renews of its
 * proofs count from the touch its latest handshake shows (ehs[q]), within
 * its reach; the mutants' from their own step */
#define ERENEW(q, at) EH(q, renew); printf(",\"owner\":%d,\"at\":%d,\"until\":%d}\n", sid[q] + 1, at, (at) + 1000000)
/* the waiter's reading of a listing: our node at index i (0 first, -1 gone) */
#define ETURN(q, i) EH(q, turn); ENODE(znode[q]); printf(",\"n\":%d,\"pzxid\":%d", i, znode[q] + 1); \
	if \
	:: i == 0 -> printf(",\"note\":\"first\"}\n") \
	:: i > 0 -> printf(",\"note\":\"wait\"}\n") \
	:: else -> printf(",\"note\":\"gone\"}\n") \
	fi
/* the reading of a listing's reply x by the gate's holder */
#define ETURNX(q, x) \
	if \
	:: x == FIRST -> ETURN(q, 0) \
	:: x < MAXN -> ETURN(q, 1) \
	:: x == GONE -> ETURN(q, -1) \
	:: else \
	fi
/* -DREACH=k (with EMIT): an assertion fails at the k-th of the steps
 * below that random simulation seldom reaches, so that pan's error trail,
 * replayed by spin -t, is a trace of the correct model through it. */
#ifdef REACH
#define REACHED(k) assert(REACH != k)
#else
#define REACHED(k) skip
#endif
#else
#define E(x)
#define EA(x)
#endif

/* the ensemble, as the leader sees it */
byte live;         /* bit n: node n exists */
byte nowner[MAXN]; /* p+1: node n is an ephemeral node of p (or was, and a cut server still has it) */
byte nguid[MAXN];  /* GUID in the node's name */
byte nseq;         /* next sequence number */
byte watch[P];     /* node p's waiter has a data watch on, or NONE */
bool expired[P];   /* the leader expired p's session; p has no new one yet */
byte cutp = NONE;  /* the process whose server is cut from the leader */
byte cview;        /* that server's view: the nodes live when it was cut */

/* per session */
chan wire[P] = [WIRE] of { mtype, byte, byte };
bool conn[P];      /* connected to a server */
bool lease[P];     /* the lease: its deadline lies ahead */
bit sid[P];        /* the session (its parity): flips when a new one replaces an expired one */
bit zsid[P];       /* the session of p's last node created or found (Hold.owner) */
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
#if G == 1
#define HOLDS(q) (valid[(q) * G])
#elif G == 2
#define HOLDS(q) (valid[(q) * G] || valid[(q) * G + 1])
#else
#define HOLDS(q) (valid[(q) * G] || valid[(q) * G + 1] || valid[(q) * G + 2])
#endif
byte nvalid;
byte lasttok = NONE;
byte cancels;

/* queueDelete(node): the previous pending delete, if unsent, is retried in
 * the background. */
inline queueDelete(q, n) {
	E(EH(q, del_add); EPATH; ENODE(n); EEND)
	if
	:: pend[q] != NONE -> bgdel[q] = bgdel[q] | BIT(pend[q])
	:: else
	fi;
	pend[q] = n
}

/* the leader deletes node n and fires the data watches on it, except the
 * one kept by a server cut from it, which fires when the cut ends */
inline delnode(n) {
	live = live & ~BIT(n);
	if
	:: !IN(cview, n) -> nowner[n] = 0; nguid[n] = 0
	:: else /* still in the cut server's view */
	fi;
	k = 0;
	do
	:: k < P ->
		if
		:: watch[k] == n && k != cutp -> watch[k] = NONE; wev[k] = 1
		:: else
		fi;
		k++
	:: else -> k = 0; break
	od
}

/* the cut ends: the server's view goes, with the nodes only it still had */
inline endcut() {
	cutp = NONE;
	k = 0;
	do
	:: k < nseq ->
		if
		:: IN(cview, k) && !LIVE(k) -> nowner[k] = 0; nguid[k] = 0
		:: else
		fi;
		k++
	:: else -> k = 0; break
	od;
	cview = 0
}

/* p's server catches up with the leader (the cut healed, or p connected
 * again and re-armed its watches): a watch on a node gone meanwhile fires */
inline catchup(q) {
	if
	:: watch[q] != NONE && !LIVE(watch[q]) -> watch[q] = NONE; wev[q] = 1
	:: else
	fi
}

inline mknode(q, id) {
	assert(nseq < MAXN);
	k = 0;
	do
	:: k < nseq -> assert(!LIVE(k) || nowner[k] != q + 1 || nguid[k] != id); k++
	:: else -> k = 0; break
	od;
	nowner[nseq] = q + 1;
	nguid[nseq] = id;
	E(egid[nseq] = q * NGUID + id)
	live = live | BIT(nseq);
	zsid[q] = sid[q];
	rc[q] = nseq;
	nseq++
}

/* A write of session q, applied by the leader. ans: its answer reaches the
 * client (else the connection died with it on the way). */
inline apply(q, op, a, b, ans) {
	if
	:: op == DEL ->
		onwire[q] = onwire[q] & ~BIT(a);
		if
		:: LIVE(a) ->
			delnode(a);
			E(if :: ans -> EH(q, answer); EOP(DEL); ENPATH(a); ENODE(a); if :: !b -> printf(",\"retry\":true") :: else fi; EEND :: else fi)
			if
			:: ans && b -> lease[q] = 1 /* the flusher's delete: proved */
				EA(ERENEW(q, ehs[q]))
			:: else
			fi
		:: else /* NoNode: done too; an error, which proves nothing */
			EA(if :: ans -> EH(q, answer); EOP(DEL); ENPATH(a); ENODE(a); EOUTNONODE; if :: !b -> printf(",\"retry\":true") :: else fi; EEND :: else fi)
		fi
	:: op == CRE -> mknode(q, b)
		EA(if :: ans -> EH(q, answer); EOP(CRE); EPFX(q); ENODE(rc[q]); EEND :: else fi)
	:: op == MULTI -> /* delete the released node and create ours, or neither */
		onwire[q] = onwire[q] & ~BIT(a);
		if
		:: LIVE(a) -> delnode(a); mknode(q, b)
			EA(if :: ans -> EH(q, answer); EOP(MULTI); EPFX(q); ENODE(rc[q]); EEND :: else fi)
		:: else -> rc[q] = NONODE
			EA(if :: ans -> EH(q, answer); EOP(MULTI); EPFX(q); EOUTNONODE; EEND :: else fi)
		fi
	fi
}

/* A read of session q, answered by a server whose live nodes are m: the
 * leader's (live) when the server is linked to it, its own frozen view
 * (cview) when cut. */
inline serve(q, op, a, b, m) {
	if
	:: op == LIST -> /* the children, seen from our node (found by GUID) */
		rln[q] = NONE;
		k = 0;
		do
		:: k < nseq && !(IN(m, k) && nowner[k] == q + 1 && nguid[k] == b) -> k++
		:: k < nseq && IN(m, k) && nowner[k] == q + 1 && nguid[k] == b -> rln[q] = k; zsid[q] = sid[q]; break
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
				:: IN(m, k) -> rl[q] = k; break
				:: else
				fi
			:: else -> break
			od
		fi;
		k = 0
		EA(EH(q, answer); EOP(LIST); EPATH; printf(",\"n\":1"); EEND)
	:: op == GETW ->
		if
		:: IN(m, a) -> watch[q] = a; rw[q] = OK
			EA(EH(q, answer); EOP(GETW); ENODE(a); EEND)
		:: else -> rw[q] = NONODE
			EA(EH(q, answer); EOP(GETW); ENODE(a); EOUTNONODE; EEND)
		fi
	fi;
#ifdef MUTANT_READ_RENEWS
	E(printf("MUTANT a read renews\n"))
	lease[q] = 1;
	E(ERENEW(q, et)) /* what the code would record: a renew whose proof is a read */
#endif
	skip
}

/* The caller of a request that was on the wire when the connection died
 * gets an error. */
inline failed(q, op, a) {
	if
	:: op == DEL ->
		onwire[q] = onwire[q] & ~BIT(a);
		E(EH(q, answer); EOP(DEL); ENPATH(a); ENODE(a); EOUTCONN; if :: !b -> printf(",\"retry\":true") :: else fi; EEND)
#ifndef MUTANT_FORGET_FAILED_DELETE
		if
		:: LIVE(a) -> bgdel[q] = bgdel[q] | BIT(a) /* guaranteed delete: retry */
		:: else
		fi
#else
		EA(if :: LIVE(a) -> printf("MUTANT a failed delete not retried\n") :: else fi)
#endif
	:: op == CRE -> rc[q] = ERR
		EA(EH(q, answer); EOP(CRE); EPFX(q); EOUTCONN; EEND)
	:: op == MULTI -> onwire[q] = onwire[q] & ~BIT(a); rc[q] = ERR
		EA(EH(q, answer); EOP(MULTI); EPFX(q); EOUTCONN; EEND)
	:: op == LIST -> rl[q] = ERR
		EA(EH(q, answer); EOP(LIST); EPATH; EOUTCONN; EEND)
	:: op == GETW -> rw[q] = ERR
		EA(EH(q, answer); EOP(GETW); ENODE(a); EOUTCONN; EEND)
	fi
}

/* The session's holds end (takeHolds, Hold.lose): the node goes through the
 * pending delete (dropNode), the holders' contexts are cancelled. */
inline losehold(q) {
#ifndef MUTANT_NO_LOSS_SIGNAL
	if
	:: zst[q] == HELD && !hlost[q] ->
		hlost[q] = 1;
		E(EH(q, lose); ENODE(znode[q]); EEND; REACHED(1))
		queueDelete(q, znode[q]);
		n = 0;
		do
		:: n < G ->
			if
			:: valid[q * G + n] -> valid[q * G + n] = 0; nvalid--
			:: else
			fi;
			n++
		:: else -> n = 0; break
		od
	:: else
	fi;
#else
	E(if :: zst[q] == HELD && !hlost[q] -> printf("MUTANT a hold not told lost\n") :: else fi)
#endif
	skip
}

/* The connection is lost (a disconnection, or p's cut server dropping its
 * clients). applied: a write on the wire may have been applied, its answer
 * lost (else none reached the leader). */
inline disconnect(q, applied) {
	conn[q] = 0;
	E(EH(q, event); printf(",\"note\":\"EventSession StateDisconnected\"}\n"))
	n = len(wire[q]);
	do
	:: n > 0 ->
		wire[q]?op,a,b;
		if
		:: applied && (op == CRE || op == MULTI || op == DEL) ->
			if
			:: apply(q, op, a, b, 0) /* applied, the answer lost */
			:: skip                  /* lost on the way */
			fi
		:: else /* a read: whether it ran does not matter */
		fi;
		failed(q, op, a);
		n--
	:: else -> break
	od;
	op = 0; a = 0; b = 0;
	losehold(q) /* observe: StateDisconnected ends the holds */
}

/* A goroutine's hold becomes valid (unless already lost). */
inline become(viaHandoff) {
	if
	:: !hlost[p] ->
		valid[me] = 1; /* first: a statement after the guard, so that pan names the assertion if unreached */
		assert(nvalid == 0); /* mutual exclusion among valid holders */
#ifndef NOFENCE
		/* fencing: tokens increase; equal only for a local hand-off */
		assert(lasttok == NONE || znode[p] > lasttok || (viaHandoff && znode[p] == lasttok));
#endif
		lasttok = znode[p];
		nvalid++
	:: else
	fi
}

/* The create's answer is read (send.go run): a node renews the lease if
 * the create was sent in the current session (the proof's id) and its
 * window is open (Session.proved): the session has not expired since it
 * was applied. */
inline proved(q) {
	if
#ifdef MUTANT_RENEW_AFTER_EXPIRY
	:: rc[q] < MAXN && zsid[q] == sid[q] -> E(if :: expired[q] -> printf("MUTANT a renew after the expiry\n") :: else fi) lease[q] = 1 /* from its arrival: the window ignored */
		EA(ERENEW(q, et))
#else
	:: rc[q] < MAXN && zsid[q] == sid[q] && !expired[q] -> lease[q] = 1
		EA(ERENEW(q, ehs[q]))
#endif
	:: else
	fi;
#ifdef OWNER_AFTER_REPLY
	/* the node's owner read as createAndList reads it, conn.SessionID()
	 * once the create has returned, however late that is */
	if
	:: rc[q] < MAXN -> E(if :: zsid[q] != sid[q] -> printf("MUTANT an owner read after the reply\n") :: else fi) zsid[q] = sid[q]
	:: else
	fi;
#endif
	skip
}

/* Every session's environment: the ensemble's side of it (apply, expire),
 * connectivity (faults, reconnection), the lease's time (lapse, sync) and
 * the client's background work (flush the pending delete, retry failed
 * deletes, lose watch events). */
proctype session(byte p) {
	mtype op;
	byte a, b, k, n;
end:
	do
	:: atomic { /* the leader applies p's next request, through p's server */
		conn[p] && cutp != p && nempty(wire[p]) ->
		assert(!expired[p]); /* an expired session has no server linked to the leader */
		wire[p]?op,a,b;
		if
		:: op == LIST || op == GETW -> serve(p, op, a, b, live)
		:: else -> apply(p, op, a, b, 1)
		fi;
		op = 0; a = 0; b = 0
	}
	:: atomic { /* lapse: the deadline passes, no proof getting through; every hold ends (lease.lapse) */
		lease[p] && (!conn[p] || cutp == p) ->
		lease[p] = 0;
		E(EH(p, lapse); printf(",\"n\":%d}\n", zst[p] == HELD && !hlost[p]))
		losehold(p)
	}
	:: atomic { /* a sync through the leader (lease.refresh), while a lock has a node */
		conn[p] && cutp != p && !lease[p] && zst[p] != IDLE ->
		assert(!expired[p]);
		lease[p] = 1
		EA(EH(p, send); EOP(SYNC); printf(",\"path\":\"/\"}\n"); EH(p, answer); EOP(SYNC); printf(",\"path\":\"/\"}\n"); ERENEW(p, ehs[p]))
	}
	:: atomic { /* the leader expires the session: it has not heard of it for T */
		!lease[p] && !expired[p] && (!conn[p] || cutp == p) ->
		expired[p] = 1;
		assert(!HOLDS(p)); /* loss before expiry: no hold of the session is valid any more */
		n = 0;
		do
		:: n < nseq ->
			if
			:: LIVE(n) && nowner[n] == p + 1 -> delnode(n)
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
#if DISC
	:: atomic { /* fault: the connection drops */
		conn[p] && cutp != p && faults < F && FAULTY(p) ->
		faults++;
		disconnect(p, 1)
	}
#endif
#if CUT
	:: atomic { /* fault: p's server is cut from the leader; p stays connected to it */
		conn[p] && cutp == NONE && faults < F && FAULTY(p) ->
		faults++;
		cutp = p;
		cview = live
	}
	:: atomic { /* the cut server answers a read at the head of p's wire from its view */
		cutp == p && (wire[p]?[LIST,a,b] || wire[p]?[GETW,a,b]) ->
		wire[p]?op,a,b;
		serve(p, op, a, b, cview);
		op = 0; a = 0; b = 0
	}
	:: atomic { /* the cut heals before the session expired: what waited goes on */
		cutp == p && !expired[p] ->
		endcut();
		catchup(p)
	}
	:: atomic { /* the server drops its clients (syncLimit, or the session expired) */
		cutp == p ->
		endcut();
		disconnect(p, !expired[p]) /* a write forwarded before the cut may have been applied */
	}
#endif
	:: atomic { /* reconnect: same session, or a new one after expiry */
		!conn[p] ->
		conn[p] = 1;
		if
		:: expired[p] -> E(EHANDSHAKE(p, 1 - sid[p])) expired[p] = 0; sid[p] = 1 - sid[p]; lease[p] = 0 /* lease.reset */
		:: else E(EHANDSHAKE(p, sid[p]))
		fi;
		E(EH(p, event); printf(",\"note\":\"EventSession StateHasSession\"}\n"))
		catchup(p)
	}
	:: atomic {
		pend[p] != NONE && nfull(wire[p]) -> /* deleteQueue.flush */
		E(EH(p, del_flush); EPATH; ENODE(pend[p]); EEND)
		E(EH(p, send); EOP(DEL); ENPATH(pend[p]); EEND)
		wire[p]!DEL,pend[p],1;
		onwire[p] = onwire[p] | BIT(pend[p]);
		pend[p] = NONE
	}
	:: atomic {
		bgdel[p] != 0 && nfull(wire[p]) -> /* deleteGuaranteed's retry */
		n = 0;
		do
		:: bgdel[p] & BIT(n) -> break
		:: else -> n++
		od;
		bgdel[p] = bgdel[p] & ~BIT(n);
		E(EH(p, send); EOP(DEL); ENPATH(n); printf(",\"retry\":true}\n"); REACHED(2))
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
		EA(EH(p, gate_enter); EPATH; printf(",\"wait\":true}\n"))
	};
	if
	:: atomic { zkHeld[p] && !hlost[p] -> handoffs[p]++; E(EH(p, handoff); EPATH; ENODE(znode[p]); EEND) become(1) };
		goto holding
	:: atomic { zkHeld[p] && hlost[p] -> /* lost between holders: dropZK */
		E(EH(p, release); EPATH; ENODE(znode[p]); EEND)
		zkHeld[p] = 0; zst[p] = IDLE; znode[p] = NONE; hlost[p] = 0 }
	:: else
	fi;

acquire: /* zklock attempt: enqueue */
	atomic {
		E(if :: pend[p] != NONE -> EH(p, del_take); EPATH; ENODE(pend[p]); EEND :: else fi)
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
		E(EH(p, send); EOP(LIST); EPATH; EEND)
		wire[p]!LIST,0,guid[p];
		atomic { rl[p] != PEND -> x = rl[p]; rl[p] = PEND };
		if
		:: x == ERR -> goto create
		:: x == GONE -> mayExist = 0
		:: else ->
			E(REACHED(4))
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
			E(EH(p, send); EOP(MULTI); EPFX(p); EEND)
			wire[p]!MULTI,stale[p],guid[p];
			onwire[p] = onwire[p] | BIT(stale[p])
		:: else -> E(EH(p, send); EOP(CRE); EPFX(p); EEND) wire[p]!CRE,0,guid[p]
		fi;
		E(EH(p, send); EOP(LIST); EPATH; EEND)
		wire[p]!LIST,0,guid[p]
	};
	atomic { rc[p] != PEND -> proved(p) };
	if
	:: rc[p] == NONODE -> /* the released node is gone: create alone */
		E(REACHED(5))
		d_step { stale[p] = NONE; rc[p] = PEND };
		E(EH(p, send); EOP(CRE); EPFX(p); EEND)
		wire[p]!CRE,0,guid[p];
		atomic { rc[p] != PEND -> proved(p) }
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
			EA(ETURNX(p, x))
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
	E(EH(p, send); EOP(LIST); EPATH; EEND)
	wire[p]!LIST,0,guid[p];
	if
	:: rl[p] == FIRST -> E(ETURN(p, 0)) goto lead
	:: atomic { rl[p] != PEND && rl[p] != FIRST -> x = rl[p]; rl[p] = PEND EA(ETURNX(p, x)) }
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
	E(EH(p, send); EOP(GETW); ENPATH(x); EEND)
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
	:: atomic { wev[p] -> wev[p] = 0; x = 0 EA(EH(p, event); printf(",\"note\":\"EventNodeDeleted StateSyncConnected\"}\n")) }; goto list
	:: atomic { watch[p] == NONE && !wev[p] -> x = 0 }; goto list
		/* the periodic re-check, which matters only once the watch is
		 * gone and its event lost: while the watch stands the listing
		 * would find the same predecessor */
	:: atomic { cancels < C -> cancels++; x = 0 }; /* ctx ends: delete our node, leave the gate */
		d_step { queueDelete(p, znode[p]); znode[p] = NONE; zst[p] = IDLE };
		E(EH(p, gate_leave); EPATH; EEND) /* before the gate is free: the next holder's steps follow */
		gate[p] = 0;
		goto next
	fi;

lead: /* our node leads: the session grants the hold once it can vouch for it (grant.go) */
	if
	:: atomic { /* grantNow: connected, the lease ahead, the node's session the current one */
		conn[p] && lease[p] && zsid[p] == sid[p] ->
		rl[p] = PEND;
		x = 0;
		zst[p] = HELD;
		hlost[p] = 0;
		zkHeld[p] = 1;
		handoffs[p] = 0;
		E(EH(p, grant); printf(",\"owner\":%d,\"note\":\"now\"}\n", zsid[p] + 1))
		E(EH(p, grant); EPATH; ENODE(znode[p]); printf(",\"zxid\":%d,\"owner\":%d}\n", znode[p] + 1, zsid[p] + 1))
		become(0)
	}
	:: atomic { /* grantGone: the node went with its session; queue again */
		zsid[p] != sid[p] ->
		E(EH(p, grant); printf(",\"owner\":%d,\"note\":\"gone\"}\n", zsid[p] + 1))
		E(EH(p, grant); EPATH; ENODE(znode[p]); printf(",\"owner\":%d,\"out\":\"err\",\"note\":\"gone\"}\n", zsid[p] + 1); REACHED(3))
		rl[p] = PEND;
		x = 0;
		zst[p] = IDLE;
		znode[p] = NONE
	};
		goto acquire
	fi;
	/* otherwise (grantDown, grantLease) it waits: for the connection, or
	 * the renewer's or refresh's sync */

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
		EA(EH(p, gate_pass); EPATH; EEND)
	};
		goto next
	:: k = 0 /* no hand-off (no local waiter, count or time limit reached, or lost) */
	fi;
	d_step {
		if
		:: zkHeld[p] ->
			E(EH(p, release); EPATH; ENODE(znode[p]); EEND)
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
	E(EH(p, gate_leave); EPATH; EEND)
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
			conn[i] = 1;
			pend[i] = NONE;
			stale[i] = NONE;
			znode[i] = NONE;
			watch[i] = NONE;
			rc[i] = PEND;
			rl[i] = PEND;
			rw[i] = PEND;
			E(EHANDSHAKE(i, sid[i]))
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
#define ORPHAN(q, n) (LIVE(n) && nowner[n] == (q) + 1 && !REF(q, n))
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
