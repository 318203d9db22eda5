/*
 * models/qpair.pml - SPIN model of the SQ/CQ queue protocol exactly as implemented in
 * include/bam/qpair.h as of commit f825e47 (line numbers ":N" refer to that file,
 * unless a file is named) - submitters, waiters, CQ head movers - driven against the
 * emulated controller of src/backends/emu/emu.c (emu_worker_main) and src/nvmet/nvmet.h
 * (nvmet_post_cqe, nvmet_cq_full), or with -DCTRL_GPU against the batching GPU worker of
 * src/backends/emu/emu_gpu.cu (serve_queue). Checked by scripts/model-check; models/README.md
 * has the mapping, the configurations, the results and the bugs found.
 *
 * Memory model. SPIN explores every interleaving of the steps below under sequential
 * consistency (SC). One Promela step is one access of the C code to a shared word:
 * every plain or atomic load and store is its own step, and atomic{} is used only
 * where the C code has a single atomic instruction (CAS, fetch_add/or/and/sub, one
 * 32-bit load or store such as CQE DW3), plus thread-local bookkeeping and ghost
 * updates riding on the access they describe. That the weakly ordered hardware (PTX;
 * C11 on the CPU target) only produces outcomes this SC model allows is NOT checked
 * here: it is argued by the acquire/release pairs and fences documented in
 * include/bam/atomic.h and docs/MEMORY-ORDERING.md (SQE copy released by the mark
 * fetch_or and acquired by move_tail's mark load; fence_acq_rel_sys before the
 * release_sys doorbell store; CQE DW0-DW2 and the data released by the DW3 store and
 * acquired by the mover's DW3 load and the waiter's DW3 re-read and fence, :374-375;
 * CID and credit handed over by acq_rel atomics).
 *
 * Reductions (default; -DFINE turns off R1, R2, R3, R5 and R4 for the credit wait,
 * and scripts/model-check checks FINE too):
 *  R1 a relaxed load that only decides whether to try a CAS (bam_qp_trylock, CID
 *     search) is merged with the CAS: a failed attempt has no effect, so only
 *     stuttering steps go. R1' the credit: load, fetch_add and give-back in one step
 *     (FINE keeps them apart).
 *  Word-wise runs, as in the C code: move_tail reads a 32-slot mark word once and
 *     clears its run of marked slots with one fetch_and (one step here: the ring of
 *     D <= 32 slots is one word, and a run ends at its last slot); move_head reads the
 *     consumed word once; a run of two or more consumed CQEs has its bits cleared in
 *     one step, the head published past it, then its CIDs freed one step each; a
 *     single consumed CQE, or none, takes the entry-by-entry path with the bit from
 *     that same load.
 *  R2 a word written only under a lock (cq_head, sq_head under cq_lock; sq_tail under
 *     sq_lock), read or written by the lock holder, joins the holder's adjacent step
 *     when nobody else can see the difference (others only read it; sq_head and
 *     sq_tail nobody else reads at all).
 *  R3 CQE DW2 (SQHD) of a CQE the head is passing is read with the CID-free step: the
 *     controller does not rewrite a slot the head has not passed (asserted below).
 *  R4 a spin whose next iteration would read the same values (idle controller poll,
 *     failed sq_lock in move_tail wait, failed CQ rescan, credit wait whose try could
 *     pass nothing) is a blocking wait until one of the words it reads changes.
 *  R5 bam_qpair_wait's "at most 8 tries to pass its own CQE" becomes: the first try,
 *     then give up at any point, or try again when a try can pass something. This
 *     includes every behaviour of the bounded loop. Before it, a choice to skip the
 *     help altogether: bam_qpair_help_lazy (a line fill whose CQE the head lagged
 *     little behind) does that.
 *  The waiter's scan loads a group of DW3s before it looks at any (BAM_QP_SCAN);
 *     its checks are thread-local, so that is the schedule of the entry-by-entry scan
 *     below in which no other process moves between the loads, with the loads past
 *     the end of the posted CQEs discarded.
 *  R6 the submitter's SQE write (:318-323), the controller's SQE copy (emu.c:423) and
 *     CQE post (nvmet.h:167-171) are one step each: an SQ slot changes hands only
 *     through mark, doorbell and SQHD, and a violation fails an assertion at the
 *     first early access; no reader looks at DW2 before it saw the new phase in DW3.
 *
 * Scale. 32-bit virtual counters become small counters with explicit modulo, so they
 * wrap during a run: tickets, sq_tail, sq_head modulo TW (a multiple of D, as 2^32
 * is), turn counters modulo 2*TW/D (the period bam_qp_turn_mask() encodes), cq_head
 * modulo CW (a multiple of 2*D, so the phase tag stays exact). CIDs are 0..D-1 as in
 * the C code (cid_hint matters only modulo D). The 64-byte SQE is reduced to the
 * command it carries and its CID; the 16-byte CQE to SQHD (DW2) and DW3 (CID, phase
 * tag). Left out: status codes, the statistics counters, bam_spin_pause, the
 * controller's data movement, timing model and fault injection (dropped CQEs,
 * stop_after), several queues per worker.
 *
 * Timeouts. The base model has none: every wait spins until it succeeds. -DTIMEOUTS
 * makes every deadline check of the C code a nondeterministic choice: credit wait
 * (the C code moves its deadline forward on CQ head moves while the thread is behind
 * the credit line's gate, which a nondeterministic give-up covers; a thread that gives
 * up counts itself served), CID search (:290), move_tail wait (:340, abandoning the CID) and CQ wait
 * (:389, abandoning the CID). The turn wait's deadline (:309-312, which marks the queue
 * pair broken) and the 'broken' check (:266) are not modelled: CHECK_TURN_NOSPIN shows
 * that loop body is never entered.
 *
 * Properties (assertions; liveness: ltl 'live' under weak fairness):
 *  - an SQ slot is never rewritten before the controller has copied it;
 *  - the doorbell exposes only written SQEs, each of the ticket expected there;
 *  - the controller never overruns the CQ; the head passes only posted CQEs;
 *  - a waiter accepts only the CQE of its own command, and no CQE twice;
 *  - the DW3 re-read with acquire (:374) still shows the CQE the relaxed scan matched;
 *  - no CQE without a waiting command (stray), and the head never waits forever on a
 *    CQE nobody will consume (orphan, with TIMEOUTS);
 *  - CHECK_TURN_NOSPIN: the turn wait never spins (the claim at qpair.h:303);
 *  - live: every thread finishes all its commands.
 *
 * Broken variants (scripts/model-check must catch each):
 *   BROKEN_TAIL        move_tail advances over every slot that has a ticket, marked or not
 *   BROKEN_EARLY_FREE  the waiter frees its CID and credit once it consumed its CQE,
 *                      before the CQ head passes it
 *   BROKEN_CREDIT      credit limit depth instead of depth-1 (c <= mask at :272)
 *   BROKEN_PHASE       the waiter matches a CQE by CID alone, ignoring the phase tag
 *   BROKEN_CID_BEFORE_HEAD  the CID of a passed CQE freed before cq_head is published
 *                      (:185 left out): qpair.h before commit f825e47, bug 1 of
 *                      models/README.md
 *   BROKEN_BATCH_WRAP_PHASE  (GPU controller, -DCQ_START) a batch's CQE past the CQ's
 *                      end keeps the old phase tag
 *   BROKEN_STEP5_STRAND with TIMEOUTS: the move_tail-wait timeout returns without
 *                      abandoning its CID: qpair.h before commit 5f4f8eb, bug 2
 *   BROKEN_RUN_FREE_FIRST a run of consumed CQEs has its CIDs freed before the head is
 *                      published past it (bug 1 again, on the word-wise path)
 *   BROKEN_LINE_NOSERVE a thread that got its credit from the line does not count itself
 *                      served: the line stops behind it (deadlock)
 *   BROKEN_LINE_UNSIGNED the gate compares the distance to credit_served unsigned: a
 *                      thread whose successors left the line first sees itself far back
 *                      and waits for ever (deadlock)
 *   BROKEN_NO_TURN_WAIT the turn wait skipped (NOT caught: the wait is redundant while
 *                      the credit limit holds; see CHECK_TURN_NOSPIN)
 *
 * Ghost state (g_*, sqe_tkt, cqe_cmd) is not in the C code; it serves the assertions.
 */

#ifndef D
#define D 2                 /* depth: entries per SQ and per CQ (power of two) */
#endif
#ifndef NT
#define NT 3                /* submitting threads */
#endif
#ifndef NC
#define NC 2                /* commands per thread, each submitted then waited for */
#endif
#ifndef TW
#define TW (2 * D)          /* modulus of tickets, sq_tail, sq_head (2^32 in C) */
#endif
#ifndef CW
#define CW (2 * D)          /* modulus of cq_head (2^32 in C) */
#endif
#ifndef KTRIES
#define KTRIES 8            /* bam_qpair_wait: tries to pass its own CQE (:382), FINE */
#endif

#ifndef LW
#define LW 8                /* modulus of credit_line, credit_served (2^32 in C): > 2 * NT */
#endif

#define MASK     (D - 1)
/* the credit line's gate (qpair.h step 1): fewer than depth-1 + slack numbers before 'me' not
 * yet counted in credit_served. The C code compares the difference as an int32_t: it
 * is negative when later numbers left the line first (a thread past the gate that got
 * its credit before one ahead of it, or a timeout), and then the gate is open. Here
 * the upper half of the modulus stands for the negative differences (LW > 2 * NT) */
#define AHEAD(me) (((me) + LW - credit_served) % LW)
/* the gate's slack past the depth-1 credits (BAM_QP_GATE_SLACK: 16 to 64 in C, more
 * than the threads here, which would leave the gate always open). 0 (the default)
 * keeps the most threads behind the gate; scripts/model-check also runs SLACK=1.
 * Safety does not depend on the slack (the credits count what is outstanding); the
 * line's liveness is that the first number in line always passes the gate. */
#ifndef SLACK
#define SLACK 0
#endif
#ifndef BROKEN_LINE_UNSIGNED
#define GATE_OPEN(me) (AHEAD(me) < MASK + SLACK || AHEAD(me) >= LW / 2)
#else
#define GATE_OPEN(me) (AHEAD(me) < MASK + SLACK)
#endif
#define TURNMOD  (2 * (TW / D))                 /* bam_qp_turn_mask() + 1 */
#define PHASE(p) ((((p) / D) % 2) ^ 1)          /* bam_qp_expected_phase() */

#ifdef BROKEN_CREDIT
#define CREDIT_OK(c) ((c) <= MASK)              /* BROKEN: depth outstanding */
#else
#define CREDIT_OK(c) ((c) < MASK)               /* qpair.h:272: depth-1 outstanding */
#endif

#define CID_FREE      0
#define CID_BUSY      1
#define CID_ABANDONED 2

/* move_head would pass the CQE at the head: consumed, or posted and not BUSY (R4, R5) */
#define HEAD_CAN_MOVE (cq_consumed[cq_head % D] || \
	(cqe_ph[cq_head % D] == PHASE(cq_head) && cid_state[cqe_cid[cq_head % D]] != CID_BUSY))

/* ---- struct bam_qpair (qpair.h:61-92) ------------------------------------------ */
byte credits;               /* outstanding commands */
byte credit_line;           /* next number in the credit line, modulo LW */
byte credit_served;         /* numbers that left the line, modulo LW */
byte cid_hint;              /* modulo D */
byte cid_state[D];
byte sq_ticket;             /* modulo TW */
byte sq_turn[D];            /* modulo TURNMOD */
bool sq_mark[D];            /* one bit per slot of the sq_mark words */
bool sq_lock;
byte sq_tail;               /* modulo TW */
bool cq_lock;
#ifndef CQ_START
#define CQ_START 0          /* -DCQ_START=k (GPU controller): the CQ starts at slot k, its
			     * slots below k holding consumed entries of phase 1, so a batch
			     * of the first pass can wrap */
#endif
byte cq_head = CQ_START;    /* modulo CW */
byte sq_head;               /* modulo TW */
bool cq_consumed[D];        /* one bit per slot of the cq_consumed words */

/* ---- doorbells (emu_ctrl.db) --------------------------------------------------- */
byte sq_db;                 /* SQ tail doorbell: slot index */
byte cq_db = CQ_START;      /* CQ head doorbell: slot index */

/* ---- queue memory ---------------------------------------------------------------- */
byte sqe_cmd[D];            /* SQE payload: which command (tid * NC + k + 1) */
byte sqe_tkt[D];            /* ghost: the ticket its writer held */
byte sqe_cid[D];            /* CDW0 31:16 */
byte cqe_sqhd[D];           /* DW2 15:0 */
byte cqe_cid[D];            /* DW3 15:0 */
bit  cqe_ph[D];             /* DW3 bit 16, phase tag (the CQ memory starts zeroed) */
byte cqe_cmd[D];            /* ghost: command the controller completed, travels with DW3 */

/* ---- ghost state for the properties ----------------------------------------------- */
bool g_sq_full[D];          /* SQE written, the controller has not copied it yet */
bool g_cq_live[D];          /* CQE posted, the CQ head has not passed it yet */
bool g_cq_taken[D];         /* CQE accepted by a waiter */
bool g_orphan[D];           /* CID left BUSY by a submit that returned (BROKEN_STEP5_STRAND) */
byte done;                  /* threads that finished all their commands */

ltl live { <> (done == NT) }

/*
 * bam_qpair_cq_move_head_locked, qpair.h:148-211. The caller holds cq_lock and read
 * h0 = cq_head (:151) with it (see trylock); h = h0 (:152).
 */
inline move_head()
{
	do
	:: atomic {
		/* one load acquire of the consumed word: the run of consumed CQEs from h, up
		 * to the word's last slot (D <= 32: the ring is one word, its last slot D-1) */
		hr = 0; hk = h;
		do
		:: cq_consumed[hk % D] ->
			hr++; hk = (hk + 1) % CW;
			if
			:: hk % D == 0 -> break
			:: else -> skip
			fi
		:: else -> break
		od;
		hk = 0
	   };
	   if
	   :: hr > 1 ->
		/* a run passed at once: its bits cleared by one fetch_and, the head
		 * published past it, then its CIDs freed one by one */
		atomic {
			hk = h;
			do
			:: hk != (h + hr) % CW -> cq_consumed[hk % D] = 0; hk = (hk + 1) % CW
			:: else -> break
			od
		};
		atomic {
			sqhd = cqe_sqhd[(h + hr - 1) % D];      /* DW2 of the run's last CQE */
			have = 1;
			hk = h;
			do
			:: hk != (h + hr) % CW ->
				assert(g_cq_live[hk % D]);      /* passes only posted CQEs */
				g_cq_live[hk % D] = 0;
				hk = (hk + 1) % CW
			:: else -> break
			od
		};
#if !defined(BROKEN_CID_BEFORE_HEAD) && !defined(BROKEN_RUN_FREE_FIRST)
		cq_head = (h + hr) % CW;                /* store release: past the run */
#endif
		hk = h;
		do
		:: hk != (h + hr) % CW ->
			atomic {
#if !defined(BROKEN_EARLY_FREE)
				/* BROKEN_EARLY_FREE: their waiters freed them already */
				dcid = cqe_cid[hk % D];         /* DW3 read relaxed (ordered by the bits' acquire) */
				cid_state[dcid] = CID_FREE;     /* CID reusable, after the head passed it */
				freed++;
#endif
				hk = (hk + 1) % CW;
				dcid = 0
			}
		:: else -> break
		od;
#ifdef BROKEN_RUN_FREE_FIRST
		/* BROKEN: the run's CIDs freed before the head is published past it */
		cq_head = (h + hr) % CW;
#endif
		atomic { h = (h + hr) % CW; hr = 0; hk = 0 }
	   :: else ->
	   cons = (hr == 1);                            /* the same load's bit at h */
	   hr = 0;
	   atomic { dcid = cqe_cid[h % D]; dph = cqe_ph[h % D] }    /* :160 DW3 load acquire */
	   if
	   :: cons ->
		cq_consumed[h % D] = 0                  /* :163 fetch_and */
	   :: else ->
		if
		:: dph != PHASE(h) -> break             /* :165-166 not posted yet */
		:: else -> skip
		fi;
		st = cid_state[dcid];                   /* :167 load acquire */
		if
		:: st == CID_BUSY ->                    /* :168-169 its waiter has not seen it */
			/* the head stops here until that waiter consumes it: there must be one */
			assert(!g_orphan[dcid]);
			break
		:: st == CID_FREE ->                    /* :170-175 stray: no command has this CID */
			assert(st != CID_FREE)
		:: st == CID_ABANDONED -> skip          /* :176 late CQE of a timed-out wait */
		fi
	   fi;
#ifdef FINE
	   sqhd = cqe_sqhd[h % D];                      /* :178 load relaxed DW2 */
#endif
	   atomic {
#ifndef FINE
		sqhd = cqe_sqhd[h % D];                 /* :178 DW2 of an unpassed CQE (R3) */
#endif
		have = 1;                               /* :179 */
		assert(g_cq_live[h % D]);               /* passes only a posted CQE */
		g_cq_live[h % D] = 0
	   };
#ifndef BROKEN_CID_BEFORE_HEAD
	   cq_head = (h + 1) % CW;                      /* :185 publish the head past it first */
#endif
	   atomic {
#if defined(BROKEN_EARLY_FREE)
		/* BROKEN: a consumed CQE's CID and credit were freed by its waiter already */
		if
		:: !cons -> cid_state[dcid] = CID_FREE; freed++
		:: else -> skip
		fi;
#else
		/* :186 store release: CID reusable. BROKEN_CID_BEFORE_HEAD: the order before
		 * commit f825e47, :185 left out, the head published only at :203 */
		cid_state[dcid] = CID_FREE;
		freed++;                                /* :187 */
#endif
		h = (h + 1) % CW;                       /* :188 */
		cons = 0; dcid = 0; dph = 0; st = 0
	   }
	   fi
	od;
	atomic { cons = 0; dcid = 0; dph = 0; st = 0 };
	if
	:: h == h0 -> skip                              /* :190-191 */
	:: else ->
		if
		:: have ->                              /* :193-202 free SQ slots up to SQHD */
			/* sq_head is read and written only under cq_lock (R2) */
			atomic { sh = sq_head; nsh = (sh + ((sqhd + TW - sh) % D)) % TW; s = sh }  /* :197-198 */
			do
			:: s != nsh ->                  /* :199-200 fetch_add turn: odd -> even */
				atomic { sq_turn[s % D] = (sq_turn[s % D] + 1) % TURNMOD; s = (s + 1) % TW }
			:: else -> break
			od;
#ifdef FINE
			sq_head = nsh;                  /* :201 store release */
			cq_head = h                     /* :203 store release */
#else
			atomic { sq_head = nsh; cq_head = h }   /* :201 (R2), :203 store release */
#endif
		:: else ->
			cq_head = h                     /* :203 store release */
		fi;
		if
		:: freed > 0 -> credits = credits - freed   /* :205-206 fetch_sub */
		:: else -> skip
		fi;
		cq_db = h % D                           /* :209 CQ head doorbell, store release sys */
	fi
}

/*
 * bam_qp_trylock, qpair.h:115-118: a relaxed load, then a CAS if the load saw 0.
 * Default: one step, the CAS (R1), and the winner's first read of the word the lock
 * guards (R2: cq_head for :151, sq_tail for :227). -DFINE keeps the three steps.
 */
inline trylock(lock, ok, priv, copy)
{
#ifdef FINE
	if
	:: lock == 0 -> atomic { if :: lock == 0 -> lock = 1; ok = 1 :: else -> ok = 0 fi }
	:: else -> ok = 0
	fi;
	if
	:: ok -> copy = priv
	:: else -> skip
	fi
#else
	atomic { if :: lock == 0 -> lock = 1; ok = 1; copy = priv :: else -> ok = 0 fi }
#endif
}

/*
 * bam_qpair_cq_try_advance, qpair.h:214-220.
 */
inline try_advance()
{
	trylock(cq_lock, okl, cq_head, h0);             /* :216; :151 h0 = cq_head */
	if
	:: okl ->
		h = h0;
		move_head();                            /* :217 */
		atomic {                                /* :218 unlock: store release */
			cq_lock = 0;
			okl = 0; h0 = 0; h = 0; sqhd = 0; have = 0; freed = 0; sh = 0; nsh = 0; s = 0
		}
	:: else -> skip
	fi
}

/*
 * bam_qpair_sq_move_tail_locked, qpair.h:224-248. The caller holds sq_lock and read
 * t0 = sq_tail (:227) with it (see trylock).
 */
inline move_tail()
{
	t = t0;
	do
#ifdef BROKEN_TAIL
	:: sq_mark[t % D] || t != sq_ticket ->          /* BROKEN: every ticketed slot */
		atomic { sq_mark[t % D] = 0; t = (t + 1) % TW }
#else
	:: sq_mark[t % D] ->
		/* one load acquire of the mark word and one fetch_and of its run: the marked
		 * slots from t up to the word's last slot (D <= 32: slot D-1); only the lock
		 * holder clears marks, so the slot seen marked is still marked here */
		atomic {
			do
			:: sq_mark[t % D] ->
				sq_mark[t % D] = 0;
				t = (t + 1) % TW;
				if
				:: t % D == 0 -> break
				:: else -> skip
				fi
			:: else -> break
			od
		}
#endif
	:: else -> break                                /* no mark at the tail */
	od;
	if
	:: t != t0 ->
#ifdef FINE
		sq_tail = t;                            /* :238 store release */
		sq_db = t % D                           /* :242-243 fence; doorbell store release sys */
#else
		atomic { sq_tail = t; sq_db = t % D }   /* :238 (R2); :242-243 fence; doorbell */
#endif
	:: else -> skip
	fi
}

/*
 * A submitting thread: NC times bam_qpair_submit (qpair.h:260-349), then
 * bam_qpair_wait (qpair.h:358-396) for that command.
 */
active [NT] proctype Thread()
{
	byte tid = _pid;
	byte k, mycmd;
	byte me;                                        /* number in the credit line */
	byte r, id, ticket, slot, want;
	bit okl;
	byte t0, t;                                     /* move_tail */
	byte start, p, dcid, dcmd, kk;                  /* wait */
	bit dph;
	byte h0, h, sqhd, sh, nsh, s, freed, st;        /* move_head */
	byte hr, hk;                                    /* move_head: a run of consumed CQEs */
	bit have, cons;
#ifdef FINE
	byte c;
#endif

	do
	:: k < NC ->
		mycmd = tid * NC + k + 1;

		/* :266-267 'broken' check: not modelled, the flag is set only by the turn
		 * wait's timeout (:309-312), and that loop body is never entered */

		/* ---- 1. a credit (qpair.h step 1): the fast path when nobody is in line,
		 * else a number in the credit line, the gate, then the credit ---- */
		r = 2;
#ifdef FINE
		/* the loads of the line's two counters and of credits: separate steps */
		me = credit_line;
		if
		:: me == credit_served ->
			c = credits;
			if
			:: CREDIT_OK(c) ->
				atomic { c = credits; credits = credits + 1 };   /* fetch_add */
				if
				:: CREDIT_OK(c) -> r = 1
				:: else -> credits = credits - 1 /* none after all: give it back */
				fi
			:: else -> skip
			fi
		:: else -> skip
		fi;
		c = 0;
#else
		/* loads, fetch_add and give-back merged (R1'); the line's counters are read
		 * with them (a stale pair only sends a thread to the line, or past it while
		 * others join, which the interleavings of FINE cover) */
		atomic {
			if
			:: credit_line == credit_served && CREDIT_OK(credits) -> credits = credits + 1; r = 1
			:: else -> skip
			fi
		};
#endif
		if
		:: r == 1 -> me = 0
		:: else ->
			atomic { me = credit_line; credit_line = (credit_line + 1) % LW };   /* fetch_add */
			do
#ifdef FINE
			:: if
			   :: GATE_OPEN(me) ->                  /* load of credit_served */
				c = credits;
				if
				:: CREDIT_OK(c) ->
					atomic { c = credits; credits = credits + 1 };
					if
					:: CREDIT_OK(c) -> r = 1
					:: else -> credits = credits - 1; r = 2
					fi
				:: else -> r = 2
				fi;
				c = 0
			   :: else -> r = 2
			   fi;
#else
			:: atomic {
				if
				:: GATE_OPEN(me) && CREDIT_OK(credits) -> credits = credits + 1; r = 1
				:: else -> r = 2
				fi
			   };
#endif
			   if
			   :: r == 1 ->
#ifndef BROKEN_LINE_NOSERVE
				credit_served = (credit_served + 1) % LW;  /* red add: served */
#endif
				break
			   :: else ->
				try_advance();
#ifdef TIMEOUTS
				if
				:: credit_served = (credit_served + 1) % LW;  /* leave the line */
				   me = 0;
				   goto cmd_done                /* -ETIMEDOUT */
				:: skip
				fi;
#endif
#ifndef FINE
				/* spin (R4): the next attempt differs only once the gate is open
				 * and a credit free, or a try could move the CQ head */
				(GATE_OPEN(me) && CREDIT_OK(credits)) || HEAD_CAN_MOVE
#else
				skip
#endif
			   fi
			od;
			me = 0
		fi;
		r = 0;

		/* ---- 2. a CID: qpair.h:282-294 ---- */
		atomic { id = cid_hint; cid_hint = (cid_hint + 1) % D };   /* :283 fetch_add */
		do
#ifdef FINE
		:: if                                   /* :287 load relaxed; :288 CAS (the
		                                         * first try's CAS without the load:
		                                         * a failed CAS changes nothing) */
		   :: cid_state[id] == CID_FREE ->
			atomic { if :: cid_state[id] == CID_FREE -> cid_state[id] = CID_BUSY; r = 1 :: else -> r = 0 fi }
		   :: else -> r = 0
		   fi;
#else
		:: atomic {                             /* :287-288 load + CAS (R1) */
			if
			:: cid_state[id] == CID_FREE -> cid_state[id] = CID_BUSY; r = 1
			:: else -> r = 0
			fi
		   };
#endif
		   if
		   :: r == 1 -> break
		   :: else ->
			id = (id + 1) % D               /* :285 next i */
#ifdef TIMEOUTS
			;
			if
			:: credits = credits - 1; goto cmd_done  /* :290-292 deadline: credit back */
			:: skip
			fi
#endif
		   fi
		od;
		r = 0;

		/* ---- 3. a ticket, and the slot's turn: qpair.h:296-314 ---- */
		atomic {                                /* :297 fetch_add; :298-299 */
			ticket = sq_ticket;
			sq_ticket = (sq_ticket + 1) % TW;
			slot = ticket % D;
			want = (ticket / D) * 2
		}
#ifndef BROKEN_NO_TURN_WAIT
		do
		:: ((sq_turn[slot] + TURNMOD - want) % TURNMOD) == 0 -> break   /* :302 load acquire */
		:: else ->
#ifdef CHECK_TURN_NOSPIN
			assert(false);                  /* :303 "not reached while the credit invariant holds" */
#endif
			try_advance()                   /* :308 */
		od;
#endif

		/* ---- 4. write the SQE, mark it, turn to odd: qpair.h:316-326 ---- */
		atomic {                                /* :318-323 SQE copy, then its CID */
			/* the previous SQE in this slot was copied by the controller. One
			 * step: the controller reads the slot only once the doorbell exposed
			 * it, and an early read fails its own assertion. */
			assert(!g_sq_full[slot]);
			sqe_cmd[slot] = mycmd;
			sqe_tkt[slot] = ticket;
			sqe_cid[slot] = id;
			g_sq_full[slot] = 1
		}
		sq_mark[slot] = 1;                      /* :325 fetch_or */
		sq_turn[slot] = (sq_turn[slot] + 1) % TURNMOD;      /* :326 fetch_add */

		/* ---- 5. move_tail until the tail is past our slot: qpair.h:328-346 ---- */
		do
		:: sq_mark[slot] ->                     /* :330 load acquire, bit test */
			trylock(sq_lock, okl, sq_tail, t0);     /* :331; :227 t0 = sq_tail */
			if
			:: okl ->
				move_tail();            /* :332 */
				/* :333 unlock; our ticket in [t0, t): our own move made our
				 * SQE visible, done without looking at the mark again */
				if
				:: ((ticket + TW - t0) % TW) < ((t + TW - t0) % TW) ->
					atomic { sq_lock = 0; okl = 0; t0 = 0; t = 0 };
					break
				:: else ->
					atomic { sq_lock = 0; okl = 0; t0 = 0; t = 0 }
				fi
			:: else ->
#if defined(TIMEOUTS) && defined(BROKEN_STEP5_STRAND)
				if                      /* BROKEN: the code before commit 5f4f8eb */
				:: g_orphan[id] = 1; goto cmd_done  /* -ETIMEDOUT, the CID stays BUSY */
				:: skip
				fi;
#elif defined(TIMEOUTS)
				if
				:: atomic {             /* :340-344 deadline: CAS BUSY -> ABANDONED */
					if :: cid_state[id] == CID_BUSY -> cid_state[id] = CID_ABANDONED :: else -> skip fi
				   };
				   goto cmd_done        /* -ETIMEDOUT */
				:: skip
				fi;
#endif
				/* :345 spin (R4): until the lock or our mark changes */
				(sq_lock == 0 || !sq_mark[slot])
			fi
		:: else -> break                        /* :330 mark cleared: submitted */
		od;
		atomic { ticket = 0; slot = 0; want = 0 };

		/* ---- bam_qpair_wait: qpair.h:358-396 ---- */
		do
		:: start = cq_head;                     /* :364 load acquire */
		   p = start;
		   do
		   :: ((p + CW - start) % CW) < D ->    /* :365 */
			atomic { dcid = cqe_cid[p % D]; dph = cqe_ph[p % D] }  /* :366 DW3, relaxed */
			if
#ifdef BROKEN_PHASE
			:: dcid != id -> p = (p + 1) % CW   /* BROKEN: no phase check */
			:: dcid == id -> goto found
#else
			:: dph != PHASE(p) -> break     /* :367-368 end of the posted CQEs */
			:: dph == PHASE(p) && dcid != id -> p = (p + 1) % CW   /* :369-370 */
			:: dph == PHASE(p) && dcid == id -> goto found
#endif
			fi
		   :: else -> break
		   od;
#ifdef TIMEOUTS
		   if
		   :: atomic {                          /* :389-392 CAS BUSY -> ABANDONED */
			if :: cid_state[id] == CID_BUSY -> cid_state[id] = CID_ABANDONED :: else -> skip fi
		      };
		      goto cmd_done
		   :: skip
		   fi;
#endif
		   /* not there yet: the waiter may try to move the CQ head (bam_qpair_wait_pos
		    * does on its first look and every 64th after; a choice here covers every
		    * such schedule) */
		   if
		   :: try_advance()
		   :: skip
		   fi;
		   /* :394 spin, then rescan (R4): a rescan reads the same values until the
		    * CQ head moves or the CQE where the scan stopped is posted */
		   (cq_head != start || (((p + CW - start) % CW) < D && cqe_ph[p % D] == PHASE(p)));
		   atomic { start = 0; p = 0; dcid = 0; dph = 0; dcmd = 0 }
		od;
found:
		atomic {                                /* :374 DW3 again, acquire; :375 fence */
			/* still the CQE the scan matched: the status (:377) comes from here
			 * (the GPU build takes it from the scan's load, which this shows to be
			 * the same, and orders with the fence alone) */
			assert(cqe_cid[p % D] == id && cqe_ph[p % D] == PHASE(p));
			dcmd = cqe_cmd[p % D]
		}
		atomic {                                /* :377-378 or of the consumed bit */
			assert(dcmd == mycmd);          /* the completion is this thread's command */
			assert(!g_cq_taken[p % D]);     /* no CQE is accepted twice */
			g_cq_taken[p % D] = 1;
			cq_consumed[p % D] = 1
		}
#ifdef BROKEN_EARLY_FREE
		cid_state[id] = CID_FREE;               /* BROKEN: CID and credit freed here */
		credits = credits - 1;
#endif
		/* bam_qpair_help_lazy: a fill whose CQE the head lagged little behind does
		 * not help at all; the next head move passes its CQE */
		if
		:: goto cmd_done
		:: skip
		fi;
#ifdef FINE
		kk = 0;
		do                                      /* :382-386 */
		:: kk < KTRIES ->
			if
			:: ((cq_head + CW - start) % CW) > ((p + CW - start) % CW) -> break  /* :383 */
			:: else -> try_advance(); kk++  /* :385 */
			fi
		:: else -> break
		od;
#else
		do                                      /* :382-386 (R5) */
		:: ((cq_head + CW - start) % CW) > ((p + CW - start) % CW) -> break  /* :383 */
		:: else ->
			try_advance();                  /* :385 */
			if
			:: break                        /* tries used up */
			:: HEAD_CAN_MOVE -> skip        /* another try can pass something */
			fi
		od;
#endif
cmd_done:
		atomic {                                /* :387 return */
			r = 0; okl = 0; id = 0; ticket = 0; slot = 0; want = 0;
			start = 0; p = 0; dcid = 0; dph = 0; dcmd = 0; kk = 0;
			mycmd = 0; k++
		}
	:: else -> break
	od;
	done++
}

#ifndef CTRL_GPU
#if CQ_START != 0
#error "CQ_START is for the GPU controller (-DCTRL_GPU)"
#endif
/*
 * The controller: emu_worker_main (src/backends/emu/emu.c:402-438) serving this queue, each
 * SQE executed at once (emu_exec_host, emu.c:365-400, no faults) and its CQE posted
 * by nvmet_post_cqe (nvmet.h:163-176) with SQHD = sq_head after that fetch.
 */
active proctype Controller()
{
	byte head = 0;              /* nvmet_queue.sq_head (slot index) */
	byte pos = 0;               /* ghost: virtual SQ position of head, modulo TW */
	byte tail;                  /* the doorbell value read */
	byte ctail = 0;             /* nvmet_queue.cq_tail */
	bit phase = 1;              /* nvmet_queue.phase (nvmet/admin.c:68) */
	byte cmd, cid;

end_poll:
	do
	:: atomic { sq_db != head -> tail = sq_db }     /* emu.c:415 load acquire sys (R4) */
	   do
	   :: head == tail -> break                     /* emu.c:418 */
	   :: else ->
		/* emu.c:421 nvmet_cq_full (nvmet.h:179-184): one load of the CQ head
		 * doorbell; while the CQ is full the worker re-polls (R4) */
		((ctail + 1) % D) != cq_db;
		atomic {                                /* emu.c:423-424 SQE copy; sq_head++ */
			/* the doorbell exposed only a written SQE, of the expected ticket */
			assert(g_sq_full[head] && sqe_tkt[head] == pos);
			cid = sqe_cid[head];
			cmd = sqe_cmd[head];
			g_sq_full[head] = 0;
			head = (head + 1) % D;
			pos = (pos + 1) % TW
		}
		/* nvmet_post_cqe: DW0-DW2 (SQHD), then DW3 with release, as one step: no
		 * reader looks at DW2 of a slot before it saw the new phase in DW3 */
		atomic {
			assert(!g_cq_live[ctail]);      /* never overruns the CQ */
			cqe_sqhd[ctail] = head;         /* nvmet.h:167-169 */
			cqe_cid[ctail] = cid;           /* nvmet.h:170-171 */
			cqe_ph[ctail] = phase;
			cqe_cmd[ctail] = cmd;
			g_cq_live[ctail] = 1;
			g_cq_taken[ctail] = 0;
			ctail = (ctail + 1) % D;        /* nvmet.h:172-175 */
			if
			:: ctail == 0 -> phase = 1 - phase
			:: else -> skip
			fi;
			cmd = 0; cid = 0
		}
	   od
	od
}
#else
/*
 * The GPU worker: serve_queue (src/backends/emu/emu_gpu.cu:68-206). It takes up to
 * min(SQEs available, free CQ slots) SQEs at once, sets sq_head past all of them,
 * and posts their CQEs, each with SQHD = the new sq_head, in any order (all lanes at
 * once behind one fence: the unlimited profile; a profile's timed posting, in CQ
 * order, is one of these orders). Every lane loads
 * the SQ tail doorbell and the batch is the smallest count a lane saw (:79-81): the
 * count of one load, so one load stands for them.
 */
active proctype Controller()
{
	byte head = 0, pos = 0, tail, ctail = CQ_START, n, i, j, slot;
	int posted = 0;              /* bit j: CQE j of the batch posted */
	bit phase = 1;
	byte bcid[D], bcmd[D];

	/* -DCQ_START: the slots before it hold entries of phase 1 (pass 0, consumed).
	 * Done before the first post: no waiter scans past slot CQ_START before then. */
	atomic {
		do
		:: slot < CQ_START -> cqe_ph[slot] = 1; slot++
		:: else -> break
		od;
		slot = 0
	};
end_poll:
	do
	:: atomic { sq_db != head -> tail = sq_db }     /* emu_gpu.cu:79-83 (R4) */
	   atomic {                                     /* :84-89 one load of the CQ head doorbell */
		n = (tail + D - head) % D;
		i = (cq_db + D - ctail - 1) % D;
		if
		:: i < n -> n = i
		:: else -> skip
		fi;
		i = 0
	   };
	   if
	   :: n == 0 -> skip                            /* :95-96 CQ full: poll again */
	   :: else ->
		do                                      /* :105-109 each lane copies its SQE */
		:: i < n ->
			atomic {
				assert(g_sq_full[(head + i) % D] && sqe_tkt[(head + i) % D] == pos);
				bcid[i] = sqe_cid[(head + i) % D];
				bcmd[i] = sqe_cmd[(head + i) % D];
				g_sq_full[(head + i) % D] = 0;
				pos = (pos + 1) % TW;
				i++
			}
		:: else -> break
		od;
		atomic { head = (head + n) % D; i = 0 }         /* :188-189 */
		/* emu_gpu.cu serve_queue: the completions are all due at once (unlimited
		 * profile), so every lane posts its CQE behind one fence: the batch's CQEs
		 * may become visible in any order. Each step posts one not yet posted, any
		 * of them (j: skip an unposted one only while a later one is unposted). */
		do
		:: posted == (1 << n) - 1 -> break
		:: else ->
			atomic {
				j = 0;
				do
				:: (posted >> j) & 1 -> j++
				:: !((posted >> j) & 1) -> break
				:: !((posted >> j) & 1) && (((~posted) & ((1 << n) - 1)) >> (j + 1)) != 0 -> j++
				od;
				slot = (ctail + j) % D;
				assert(!g_cq_live[slot]);
				cqe_sqhd[slot] = head;
				cqe_cid[slot] = bcid[j];
				if
#ifndef BROKEN_BATCH_WRAP_PHASE
				:: ctail + j >= D -> cqe_ph[slot] = 1 - phase
#endif
				:: else -> cqe_ph[slot] = phase
				fi;
				cqe_cmd[slot] = bcmd[j];
				g_cq_live[slot] = 1;
				g_cq_taken[slot] = 0;
				posted = posted | (1 << j);
				bcid[j] = 0; bcmd[j] = 0
			}
		od;
		atomic {
			if
			:: ctail + n >= D -> phase = 1 - phase
			:: else -> skip
			fi;
			ctail = (ctail + n) % D;
			posted = 0; j = 0; slot = 0
		};
		atomic { n = 0; i = 0 }
	   fi
	od
}
#endif
