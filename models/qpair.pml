/*
 * models/qpair.pml - SPIN model of the SQ/CQ queue protocol exactly as implemented in
 * include/bam/qpair.h (submitters, waiters, CQ head movers), driven against the
 * emulated controller of src/emu/emu.c (emu_worker_main) and src/emu/emu_core.h
 * (emu_post_cqe, emu_cq_full), or with -DCTRL_GPU against the batching GPU worker of
 * src/emu/emu_gpu.cu (serve_queue). Checked by scripts/model-check; models/README.md
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
 * release_sys doorbell store; CQE DW0-DW2 released by the DW3 store and acquired by
 * the DW3 load; CID and credit handed over by acq_rel atomics).
 *
 * Reductions (default; -DFINE turns off R1, R2, R3, R5 and R4 for the credit wait,
 * and scripts/model-check checks FINE too):
 *  R1 a relaxed load that only decides whether to try a CAS (bam_qp_trylock :116,
 *     credits :251-252, CID :267-268) is merged with the CAS: a failed attempt has
 *     no effect, so only stuttering steps go.
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
 *     includes every behaviour of the bounded loop.
 *  R6 the submitter's SQE write (:294-299), the controller's SQE copy (emu.c:516) and
 *     CQE post (emu_core.h:257-261) are one step each: an SQ slot changes hands only
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
 * (:256), CID search (:270), move_tail wait (:314) and CQ wait (:355, abandoning the
 * CID). The turn wait's deadline (:287) is not modelled: the code documents that
 * timeout as fatal to the queue pair, and CHECK_TURN_NOSPIN shows the loop body is
 * never entered.
 *
 * Properties (assertions; liveness: ltl 'live' under weak fairness):
 *  - an SQ slot is never rewritten before the controller has copied it;
 *  - the doorbell exposes only written SQEs, each of the ticket expected there;
 *  - the controller never overruns the CQ; the head passes only posted CQEs;
 *  - a waiter accepts only the CQE of its own command, and no CQE twice;
 *  - no CQE without a waiting command (stray), and the head never waits forever on a
 *    CQE nobody will consume (orphan, with TIMEOUTS);
 *  - CHECK_TURN_NOSPIN: the turn wait never spins (the claim at qpair.h:283);
 *  - live: every thread finishes all its commands.
 *
 * Proposed fixes (not in the C code yet; models/README.md "Bugs found"):
 *   FIX_CID_AFTER_HEAD publish cq_head past a CQE before freeing its CID (:171)
 *   FIX_STEP5          on the move_tail-wait timeout, abandon the CID (as wait() does)
 *
 * Broken variants (scripts/model-check must catch each):
 *   BROKEN_TAIL        move_tail advances over every slot that has a ticket, marked or not
 *   BROKEN_EARLY_FREE  the waiter frees its CID and credit once it consumed its CQE,
 *                      before the CQ head passes it
 *   BROKEN_CREDIT      credit limit depth instead of depth-1 (c <= mask at :252)
 *   BROKEN_PHASE       the waiter matches a CQE by CID alone, ignoring the phase tag
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
#define KTRIES 8            /* bam_qpair_wait: tries to pass its own CQE (:348), FINE */
#endif

#define MASK     (D - 1)
#define TURNMOD  (2 * (TW / D))                 /* bam_qp_turn_mask() + 1 */
#define PHASE(p) ((((p) / D) % 2) ^ 1)          /* bam_qp_expected_phase() */

#ifdef BROKEN_CREDIT
#define CREDIT_OK(c) ((c) <= MASK)              /* BROKEN: depth outstanding */
#else
#define CREDIT_OK(c) ((c) < MASK)               /* qpair.h:252: depth-1 outstanding */
#endif

#define CID_FREE      0
#define CID_BUSY      1
#define CID_ABANDONED 2

/* move_head would pass the CQE at the head: consumed, or posted and not BUSY (R4, R5) */
#define HEAD_CAN_MOVE (cq_consumed[cq_head % D] || \
	(cqe_ph[cq_head % D] == PHASE(cq_head) && cid_state[cqe_cid[cq_head % D]] != CID_BUSY))

/* ---- struct bam_qpair (qpair.h:61-91) ------------------------------------------ */
byte credits;               /* outstanding commands */
byte cid_hint;              /* modulo D */
byte cid_state[D];
byte sq_ticket;             /* modulo TW */
byte sq_turn[D];            /* modulo TURNMOD */
bool sq_mark[D];            /* one bit per slot of the sq_mark words */
bool sq_lock;
byte sq_tail;               /* modulo TW */
bool cq_lock;
byte cq_head;               /* modulo CW */
byte sq_head;               /* modulo TW */
bool cq_consumed[D];        /* one bit per slot of the cq_consumed words */

/* ---- doorbells (emu_ctrl.db) --------------------------------------------------- */
byte sq_db;                 /* SQ tail doorbell: slot index */
byte cq_db;                 /* CQ head doorbell: slot index */

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
bool g_orphan[D];           /* CID left BUSY by a submit that returned -ETIMEDOUT */
byte done;                  /* threads that finished all their commands */

ltl live { <> (done == NT) }

/*
 * bam_qpair_cq_move_head_locked, qpair.h:138-196. The caller holds cq_lock and read
 * h0 = cq_head (:141) with it (see trylock); h = h0 (:142).
 */
inline move_head()
{
	do
	:: cons = cq_consumed[h % D];                   /* :149 load acquire, bit test */
	   atomic { dcid = cqe_cid[h % D]; dph = cqe_ph[h % D] }    /* :150 DW3 load acquire */
	   if
	   :: cons ->
		cq_consumed[h % D] = 0                  /* :153 fetch_and */
	   :: else ->
		if
		:: dph != PHASE(h) -> break             /* :155-156 not posted yet */
		:: else -> skip
		fi;
		st = cid_state[dcid];                   /* :157 load acquire */
		if
		:: st == CID_BUSY ->                    /* :158-159 its waiter has not seen it */
			/* the head stops here until that waiter consumes it: there must be one */
			assert(!g_orphan[dcid]);
			break
		:: st == CID_FREE ->                    /* :160-165 stray: no command has this CID */
			assert(st != CID_FREE)
		:: st == CID_ABANDONED -> skip          /* :166 late CQE of a timed-out wait */
		fi
	   fi;
#ifdef FINE
	   sqhd = cqe_sqhd[h % D];                      /* :168 load relaxed DW2 */
#endif
#ifdef FIX_CID_AFTER_HEAD
	   atomic {
#ifndef FINE
		sqhd = cqe_sqhd[h % D];                 /* :168 DW2 of an unpassed CQE (R3) */
#endif
		have = 1;                               /* :169 */
		assert(g_cq_live[h % D]);
		g_cq_live[h % D] = 0
	   };
	   /* proposed fix: publish the head past this CQE before its CID can be reused,
	    * so whoever gets the CID scans from beyond this CQE */
	   cq_head = (h + 1) % CW;
#endif
	   atomic {
#if !defined(FINE) && !defined(FIX_CID_AFTER_HEAD)
		sqhd = cqe_sqhd[h % D];                 /* :168 DW2 of an unpassed CQE (R3) */
#endif
#ifndef FIX_CID_AFTER_HEAD
		have = 1;                               /* :169 */
		assert(g_cq_live[h % D]);               /* passes only a posted CQE */
		g_cq_live[h % D] = 0;
#endif
#if defined(BROKEN_EARLY_FREE)
		/* BROKEN: a consumed CQE's CID and credit were freed by its waiter already */
		if
		:: !cons -> cid_state[dcid] = CID_FREE; freed++
		:: else -> skip
		fi;
#else
		cid_state[dcid] = CID_FREE;             /* :171 store release: CID reusable */
		freed++;                                /* :172 */
#endif
		h = (h + 1) % CW;                       /* :173 */
		cons = 0; dcid = 0; dph = 0; st = 0
	   }
	od;
	atomic { cons = 0; dcid = 0; dph = 0; st = 0 };
	if
	:: h == h0 -> skip                              /* :175-176 */
	:: else ->
		if
		:: have ->                              /* :178-187 free SQ slots up to SQHD */
			/* sq_head is read and written only under cq_lock (R2) */
			atomic { sh = sq_head; nsh = (sh + ((sqhd + TW - sh) % D)) % TW; s = sh }  /* :182-183 */
			do
			:: s != nsh ->                  /* :184-185 fetch_add turn: odd -> even */
				atomic { sq_turn[s % D] = (sq_turn[s % D] + 1) % TURNMOD; s = (s + 1) % TW }
			:: else -> break
			od;
#ifdef FINE
			sq_head = nsh;                  /* :186 store release */
			cq_head = h                     /* :188 store release */
#else
			atomic { sq_head = nsh; cq_head = h }   /* :186 (R2), :188 store release */
#endif
		:: else ->
			cq_head = h                     /* :188 store release */
		fi;
		if
		:: freed > 0 -> credits = credits - freed   /* :190-191 fetch_sub */
		:: else -> skip
		fi;
		cq_db = h % D                           /* :194 CQ head doorbell, store release sys */
	fi
}

/*
 * bam_qp_trylock, qpair.h:114-117: a relaxed load, then a CAS if the load saw 0.
 * Default: one step, the CAS (R1), and the winner's first read of the word the lock
 * guards (R2: cq_head for :141, sq_tail for :212). -DFINE keeps the three steps.
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
 * bam_qpair_cq_try_advance, qpair.h:199-205.
 */
inline try_advance()
{
	trylock(cq_lock, okl, cq_head, h0);             /* :201; :141 h0 = cq_head */
	if
	:: okl ->
		h = h0;
		move_head();                            /* :202 */
		atomic {                                /* :203 unlock: store release */
			cq_lock = 0;
			okl = 0; h0 = 0; h = 0; sqhd = 0; have = 0; freed = 0; sh = 0; nsh = 0; s = 0
		}
	:: else -> skip
	fi
}

/*
 * bam_qpair_sq_move_tail_locked, qpair.h:209-233. The caller holds sq_lock and read
 * t0 = sq_tail (:212) with it (see trylock).
 */
inline move_tail()
{
	t = t0;
	do
#ifdef BROKEN_TAIL
	:: sq_mark[t % D] || t != sq_ticket ->          /* BROKEN: every ticketed slot */
#else
	:: sq_mark[t % D] ->                            /* :217 load acquire, bit test */
#endif
		atomic { sq_mark[t % D] = 0; t = (t + 1) % TW }  /* :219 fetch_and; :220 */
	:: else -> break                                /* :218 */
	od;
	if
	:: t != t0 ->
#ifdef FINE
		sq_tail = t;                            /* :223 store release */
		sq_db = t % D                           /* :227-228 fence; doorbell store release sys */
#else
		atomic { sq_tail = t; sq_db = t % D }   /* :223 (R2); :227-228 fence; doorbell */
#endif
	:: else -> skip
	fi
}

/*
 * A submitting thread: NC times bam_qpair_submit (qpair.h:243-320), then
 * bam_qpair_wait (qpair.h:329-362) for that command.
 */
active [NT] proctype Thread()
{
	byte tid = _pid;
	byte k, mycmd;
	byte r, id, ticket, slot, want;
	bit okl;
	byte t0, t;                                     /* move_tail */
	byte start, p, dcid, dcmd, kk;                  /* wait */
	bit dph;
	byte h0, h, sqhd, sh, nsh, s, freed, st;        /* move_head */
	bit have, cons;
#ifdef FINE
	byte c;
#endif

	do
	:: k < NC ->
		mycmd = tid * NC + k + 1;

		/* ---- 1. a credit: qpair.h:249-260 ---- */
		do
#ifdef FINE
		:: c = credits;                         /* :251 load relaxed */
		   if
		   :: CREDIT_OK(c) ->                   /* :252 CAS */
			atomic { if :: credits == c -> credits = c + 1; r = 1 :: else -> r = 0 fi }
		   :: else -> r = 2
		   fi;
		   c = 0;
#else
		:: atomic {                             /* :251-252 load + CAS (R1) */
			if
			:: CREDIT_OK(credits) -> credits = credits + 1; r = 1
			:: else -> r = 2
			fi
		   };
#endif
		   if
		   :: r == 1 -> break
		   :: r == 0 -> skip                    /* CAS lost: retry */
		   :: r == 2 ->
			r = 0;
			try_advance();                  /* :254-255 */
#ifdef TIMEOUTS
			if
			:: goto cmd_done                /* :256-257 -ETIMEDOUT */
			:: skip
			fi;
#endif
#ifndef FINE
			/* :258 spin (R4): the next attempt differs only once a credit is
			 * free or a try could move the CQ head */
			(CREDIT_OK(credits) || HEAD_CAN_MOVE)
#else
			skip
#endif
		   fi
		od;
		r = 0;

		/* ---- 2. a CID: qpair.h:262-274 ---- */
		atomic { id = cid_hint; cid_hint = (cid_hint + 1) % D };   /* :263 fetch_add */
		do
#ifdef FINE
		:: if                                   /* :267 load relaxed; :268 CAS */
		   :: cid_state[id] == CID_FREE ->
			atomic { if :: cid_state[id] == CID_FREE -> cid_state[id] = CID_BUSY; r = 1 :: else -> r = 0 fi }
		   :: else -> r = 0
		   fi;
#else
		:: atomic {                             /* :267-268 load + CAS (R1) */
			if
			:: cid_state[id] == CID_FREE -> cid_state[id] = CID_BUSY; r = 1
			:: else -> r = 0
			fi
		   };
#endif
		   if
		   :: r == 1 -> break
		   :: else ->
			id = (id + 1) % D               /* :265 next i */
#ifdef TIMEOUTS
			;
			if
			:: credits = credits - 1; goto cmd_done  /* :270-272 deadline: credit back */
			:: skip
			fi
#endif
		   fi
		od;
		r = 0;

		/* ---- 3. a ticket, and the slot's turn: qpair.h:276-290 ---- */
		atomic {                                /* :277 fetch_add; :278-279 */
			ticket = sq_ticket;
			sq_ticket = (sq_ticket + 1) % TW;
			slot = ticket % D;
			want = (ticket / D) * 2
		}
#ifndef BROKEN_NO_TURN_WAIT
		do
		:: ((sq_turn[slot] + TURNMOD - want) % TURNMOD) == 0 -> break   /* :282 load acquire */
		:: else ->
#ifdef CHECK_TURN_NOSPIN
			assert(false);                  /* :283 "unreachable while credits hold" */
#endif
			try_advance()                   /* :286 */
		od;
#endif

		/* ---- 4. write the SQE, mark it, turn to odd: qpair.h:292-302 ---- */
		atomic {                                /* :294-299 SQE copy, then its CID */
			/* the previous SQE in this slot was copied by the controller. One
			 * step: the controller reads the slot only once the doorbell exposed
			 * it, and an early read fails its own assertion. */
			assert(!g_sq_full[slot]);
			sqe_cmd[slot] = mycmd;
			sqe_tkt[slot] = ticket;
			sqe_cid[slot] = id;
			g_sq_full[slot] = 1
		}
		sq_mark[slot] = 1;                      /* :301 fetch_or */
		sq_turn[slot] = (sq_turn[slot] + 1) % TURNMOD;      /* :302 fetch_add */

		/* ---- 5. move_tail until the tail is past our slot: qpair.h:304-317 ---- */
		do
		:: sq_mark[slot] ->                     /* :306 load acquire, bit test */
			trylock(sq_lock, okl, sq_tail, t0);     /* :307; :212 t0 = sq_tail */
			if
			:: okl ->
				move_tail();            /* :308 */
				atomic { sq_lock = 0; okl = 0; t0 = 0; t = 0 }  /* :309 unlock; :310 */
			:: else ->
#if defined(TIMEOUTS) && defined(FIX_STEP5)
				if
				:: atomic {             /* proposed fix: abandon the CID, as :356 does */
					if :: cid_state[id] == CID_BUSY -> cid_state[id] = CID_ABANDONED :: else -> skip fi
				   };
				   goto cmd_done
				:: skip
				fi;
#elif defined(TIMEOUTS)
				if
				:: g_orphan[id] = 1; goto cmd_done  /* :314-315 -ETIMEDOUT, CID stays BUSY */
				:: skip
				fi;
#endif
				/* :316 spin (R4): until the lock or our mark changes */
				(sq_lock == 0 || !sq_mark[slot])
			fi
		:: else -> break                        /* :306 mark cleared: submitted */
		od;
		atomic { ticket = 0; slot = 0; want = 0 };

		/* ---- bam_qpair_wait: qpair.h:329-362 ---- */
		do
		:: start = cq_head;                     /* :335 load acquire */
		   p = start;
		   do
		   :: ((p + CW - start) % CW) < D ->    /* :336 */
			atomic { dcid = cqe_cid[p % D]; dph = cqe_ph[p % D]; dcmd = cqe_cmd[p % D] }  /* :337 DW3 */
			if
#ifdef BROKEN_PHASE
			:: dcid != id -> p = (p + 1) % CW   /* BROKEN: no phase check */
			:: dcid == id -> goto found
#else
			:: dph != PHASE(p) -> break     /* :338-339 end of the posted CQEs */
			:: dph == PHASE(p) && dcid != id -> p = (p + 1) % CW   /* :340-341 */
			:: dph == PHASE(p) && dcid == id -> goto found
#endif
			fi
		   :: else -> break
		   od;
#ifdef TIMEOUTS
		   if
		   :: atomic {                          /* :355-358 CAS BUSY -> ABANDONED */
			if :: cid_state[id] == CID_BUSY -> cid_state[id] = CID_ABANDONED :: else -> skip fi
		      };
		      goto cmd_done
		   :: skip
		   fi;
#endif
		   /* :360 spin, then rescan (R4): a rescan reads the same values until the
		    * CQ head moves or the CQE where the scan stopped is posted */
		   (cq_head != start || (((p + CW - start) % CW) < D && cqe_ph[p % D] == PHASE(p)));
		   atomic { start = 0; p = 0; dcid = 0; dph = 0; dcmd = 0 }
		od;
found:
		atomic {                                /* :343-344 fetch_or consumed bit */
			assert(dcmd == mycmd);          /* the completion is this thread's command */
			assert(!g_cq_taken[p % D]);     /* no CQE is accepted twice */
			g_cq_taken[p % D] = 1;
			cq_consumed[p % D] = 1
		}
#ifdef BROKEN_EARLY_FREE
		cid_state[id] = CID_FREE;               /* BROKEN: CID and credit freed here */
		credits = credits - 1;
#endif
#ifdef FINE
		kk = 0;
		do                                      /* :348-352 */
		:: kk < KTRIES ->
			if
			:: ((cq_head + CW - start) % CW) > ((p + CW - start) % CW) -> break  /* :349 */
			:: else -> try_advance(); kk++  /* :351 */
			fi
		:: else -> break
		od;
#else
		do                                      /* :348-352 (R5) */
		:: ((cq_head + CW - start) % CW) > ((p + CW - start) % CW) -> break  /* :349 */
		:: else ->
			try_advance();                  /* :351 */
			if
			:: break                        /* tries used up */
			:: HEAD_CAN_MOVE -> skip        /* another try can pass something */
			fi
		od;
#endif
cmd_done:
		atomic {                                /* :353 return */
			r = 0; okl = 0; id = 0; ticket = 0; slot = 0; want = 0;
			start = 0; p = 0; dcid = 0; dph = 0; dcmd = 0; kk = 0;
			mycmd = 0; k++
		}
	:: else -> break
	od;
	done++
}

#ifndef CTRL_GPU
/*
 * The controller: emu_worker_main (src/emu/emu.c:495-531) serving this queue, each
 * SQE executed at once (emu_exec_host, emu.c:458-493, no faults) and its CQE posted
 * by emu_post_cqe (emu_core.h:253-266) with SQHD = sq_head after that fetch.
 */
active proctype Controller()
{
	byte head = 0;              /* emu_queue.sq_head (slot index) */
	byte pos = 0;               /* ghost: virtual SQ position of head, modulo TW */
	byte tail;                  /* the doorbell value read */
	byte ctail = 0;             /* emu_queue.cq_tail */
	bit phase = 1;              /* emu_queue.phase (emu.c:403) */
	byte cmd, cid;

end_poll:
	do
	:: atomic { sq_db != head -> tail = sq_db }     /* :508 load acquire sys (R4) */
	   do
	   :: head == tail -> break                     /* :511 */
	   :: else ->
		/* :514 emu_cq_full (emu_core.h:269-274): one load of the CQ head
		 * doorbell; while the CQ is full the worker re-polls (R4) */
		((ctail + 1) % D) != cq_db;
		atomic {                                /* :516-517 SQE copy; sq_head++ */
			/* the doorbell exposed only a written SQE, of the expected ticket */
			assert(g_sq_full[head] && sqe_tkt[head] == pos);
			cid = sqe_cid[head];
			cmd = sqe_cmd[head];
			g_sq_full[head] = 0;
			head = (head + 1) % D;
			pos = (pos + 1) % TW
		}
		/* emu_post_cqe: DW0-DW2 (SQHD), then DW3 with release, as one step: no
		 * reader looks at DW2 of a slot before it saw the new phase in DW3 */
		atomic {
			assert(!g_cq_live[ctail]);      /* never overruns the CQ */
			cqe_sqhd[ctail] = head;         /* emu_core.h:257-259 */
			cqe_cid[ctail] = cid;           /* emu_core.h:260-261 */
			cqe_ph[ctail] = phase;
			cqe_cmd[ctail] = cmd;
			g_cq_live[ctail] = 1;
			g_cq_taken[ctail] = 0;
			ctail = (ctail + 1) % D;        /* emu_core.h:262-265 */
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
 * The GPU worker: serve_queue (src/emu/emu_gpu.cu:68-202). It takes up to
 * min(SQEs available, free CQ slots) SQEs at once, sets sq_head past all of them,
 * and posts their CQEs in order, each with SQHD = the new sq_head.
 */
active proctype Controller()
{
	byte head = 0, pos = 0, tail, ctail = 0, n, i;
	bit phase = 1;
	byte bcid[D], bcmd[D];

end_poll:
	do
	:: atomic { sq_db != head -> tail = sq_db }     /* emu_gpu.cu:76 (R4) */
	   atomic {                                     /* :80-85 one load of the CQ head doorbell */
		n = (tail + D - head) % D;
		i = (cq_db + D - ctail - 1) % D;
		if
		:: i < n -> n = i
		:: else -> skip
		fi;
		i = 0
	   };
	   if
	   :: n == 0 -> skip                            /* :91-92 CQ full: poll again */
	   :: else ->
		do                                      /* :100-104 each lane copies its SQE */
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
		atomic { head = (head + n) % D; i = 0 }         /* :184-185 */
		do                                      /* :187-200 post in CQ order */
		:: i < n ->
			atomic {
				assert(!g_cq_live[ctail]);
				cqe_sqhd[ctail] = head;
				cqe_cid[ctail] = bcid[i];
				cqe_ph[ctail] = phase;
				cqe_cmd[ctail] = bcmd[i];
				g_cq_live[ctail] = 1;
				g_cq_taken[ctail] = 0;
				ctail = (ctail + 1) % D;
				if
				:: ctail == 0 -> phase = 1 - phase
				:: else -> skip
				fi;
				bcid[i] = 0; bcmd[i] = 0;
				i++
			}
		:: else -> break
		od;
		atomic { n = 0; i = 0 }
	   fi
	od
}
#endif
