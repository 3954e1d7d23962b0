/*
 * rwlock.pml: the queue rules of tierlock's read/write lock and semaphore
 * (zklock/rwlock.go, zklock/semaphore.go), on ZooKeeper's sequential nodes.
 *
 * Read/write part (RW=1): NP processes, each running EP episodes; an
 * episode reads (one read node: all local readers share it), writes (one
 * write node; never queued while the process has a read node, the
 * self-deadlock rule), or writes and then downgrades (a read node created
 * under the held write node; it holds only if the read rule, with our own
 * write node excepted, lets it go now; otherwise it is deleted and the
 * write node kept until the reading is done). Node i's sequence number is
 * i. The rules, as functions of the queue:
 *   writer: goes when no live node precedes it; watches the nearest one.
 *   reader: goes when no live writer precedes it (our held write node
 *           excepted); watches the nearest such writer.
 * A waiter re-evaluates only when the node it watches is deleted, so a
 * wrong "whom to watch" shows as a deadlock (invalid end state).
 * Checked: no process holds the write lock while another holds anything
 * (monitor), and no deadlock.
 * Mutants:
 *   MUTANT_LATER_WRITER: the reader also considers writers after it
 *     (kazoo#649): a reader and a later writer wait for each other.
 *   MUTANT_621: a downgrading reader goes because we hold the write lock,
 *     whatever precedes it (CURATOR-621): a foreign writer queued between
 *     gets in while we read.
 *
 * Semaphore part (RW=0): NS processes take a lease each, EPS times, among
 * N leases: under the mutex, create a lease node, hold when it is among
 * the first N live lease nodes, else wait for any change to the list (a
 * children watch). Checked: at most N holders, no deadlock.
 * Mutant MUTANT_COUNT: count the live leases first, then create and hold
 * if fewer than N were counted, without the mutex and without the first-N
 * rule (kazoo#213): over-admission.
 */
#ifndef RW
#define RW 1
#endif
#define NP 2
#define EP 2
#define MAXN 8
#define RD 1
#define WR 2
#define NONE 255

byte kind[MAXN];
bool alive[MAXN];
byte nnodes = 0;
bool holdW[NP];
bool holdR[NP];

#define excl(p, q) (!(holdW[p] && (holdW[q] || holdR[q])))
#define rwinv (excl(0, 1) && excl(1, 0))

inline create(k, idx) {
	atomic {
		assert(nnodes < MAXN);
		idx = nnodes;
		kind[idx] = k;
		alive[idx] = true;
		nnodes++
	}
}

/* the reader's rule for node ri, ignoring node rown */
inline readRule(ri, rown, rgoes, rwatch) {
	atomic {
		rgoes = true;
		rwatch = NONE;
		j = 0;
		do
#ifdef MUTANT_LATER_WRITER
		:: j < nnodes ->
#else
		:: j < ri ->
#endif
			if
			:: j != ri && j != rown && alive[j] && kind[j] == WR ->
				rgoes = false;
				if
				:: rwatch == NONE || j < ri -> rwatch = j
				:: else
				fi
			:: else
			fi;
			j++
		:: else -> break
		od
	}
}

inline writeRule(i, goes, watch) {
	atomic {
		goes = true;
		watch = NONE;
		j = 0;
		do
		:: j < i ->
			if
			:: alive[j] -> goes = false; watch = j
			:: else
			fi;
			j++
		:: else -> break
		od
	}
}

/* wait until the rule lets node i go, re-evaluating when the watched
 * node is deleted */
inline awaitRead(i) {
	do
	:: readRule(i, NONE, goes, watch);
		if
		:: goes -> break
		:: else -> !alive[watch]
		fi
	od
}

inline awaitWrite(i) {
	do
	:: writeRule(i, goes, watch);
		if
		:: goes -> break
		:: else -> !alive[watch]
		fi
	od
}

proctype P(byte p) {
	byte ep = 0;
	byte i, r, j, watch;
	bool goes;
	do
	:: ep < EP ->
		if
		:: /* read */
			create(RD, i);
			awaitRead(i);
			holdR[p] = true;
			holdR[p] = false;
			alive[i] = false
		:: /* write, maybe downgrade */
			create(WR, i);
			awaitWrite(i);
			holdW[p] = true;
			if
			:: /* downgrade */
				create(RD, r);
				readRule(r, i, goes, watch);
#ifdef MUTANT_621
				goes = true;
#endif
				if
				:: goes ->
					holdR[p] = true;
					atomic { holdW[p] = false; alive[i] = false };
					holdR[p] = false;
					alive[r] = false
				:: else ->
					/* keep the write node for the reading */
					alive[r] = false;
					atomic { holdW[p] = false; alive[i] = false }
				fi
			:: atomic { holdW[p] = false; alive[i] = false }
			fi
		fi;
		ep++
	:: else -> break
	od
}

/* Semaphore */
#define NS 3
#define EPS 1
#define N 2
bool mutex = false;
byte ver = 0;     /* bumped at every lease deletion: the children watch */
byte holders = 0;
bool lease[MAXN]; /* live lease nodes, by sequence */
byte nleases = 0;

inline firstN(i, goes) {
	atomic {
		c = 0;
		j = 0;
		do
		:: j < i -> if :: lease[j] -> c++ :: else fi; j++
		:: else -> break
		od;
		goes = (c < N)
	}
}

proctype S() {
	byte ep = 0;
	byte i, j, c, v;
	bool goes;
	do
	:: ep < EPS ->
#ifdef MUTANT_COUNT
		atomic {
			c = 0;
			j = 0;
			do
			:: j < nleases -> if :: lease[j] -> c++ :: else fi; j++
			:: else -> break
			od
		};
		if
		:: c < N ->
			atomic { i = nleases; lease[i] = true; nleases++ };
			holders++
		:: else -> goto next
		fi;
#else
		atomic { !mutex -> mutex = true };
		atomic { i = nleases; lease[i] = true; nleases++ };
		do
		:: atomic { v = ver; firstN(i, goes) };
			if
			:: goes -> break
			:: else -> ver != v
			fi
		od;
		holders++;
		mutex = false;
#endif
		assert(holders <= N);
		holders--;
		atomic { lease[i] = false; ver++ };
next:
		ep++
	:: else -> break
	od
}

active proctype monitor() {
end:
	if
	:: !rwinv -> assert(false)
	fi
}

init {
	atomic {
#if RW
		run P(0);
		run P(1)
#else
		run S();
		run S();
		run S()
#endif
	}
}
