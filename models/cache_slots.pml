/*
 * models/cache_slots.pml - SPIN model of the software cache's slot protocol as
 * implemented in include/bam/array.h (line numbers ":N" refer to array.h at commit
 * 4c6aaa2): the slot state word (VALID/BUSY/DIRTY/REF/PINNED/RETIRE + count), the hit
 * path (bam_slot_try_get :265-277), the fill (bam_array_line_acquire :403-462), the clock
 * (bam_cache_pick_victim :339-364), eviction (bam_cache_evict_locked :368-395), the
 * give-back of retired and pinned slots (bam_cache_slot_reclaim :304-334, bam_pend_done
 * :235-251), the flush (bam_cache_flush_slot :835-873) and the host's bam_cache_reclaim
 * (src/core/cache.c:217-228), against a controller that may complete a timed-out command
 * late (moving data into or out of the slot) and a CQ head mover that then frees its CID.
 *
 * How to run: models/run-cache-slots (all configurations and broken variants), or by
 * hand, e.g.
 *   spin -a -DNT=2 -DNA=2 -DNS=2 -DMAXTO=1 cache_slots.pml
 *   gcc -O2 -DNOCLAIM -DCOLLAPSE -DMEMLIM=4096 -o pan pan.c && ./pan -m1000000
 *
 * Memory model: sequential consistency (every interleaving of the steps below). One
 * step is one access of the C code to a shared word, atomic{} only where the C code
 * has one atomic instruction (fetch_add/or/and, CAS), with thread-local decisions and
 * ghost updates riding on the access they depend on. The weaker PTX / C11 orders are
 * argued separately (report), not checked here.
 *
 * Reductions:
 *  R1 bam_slot_set_flags's CAS loop (:285-292) is one atomic step: a failed CAS
 *     changes nothing and the loop retries on the value it saw, so the loop is
 *     equivalent to one RMW that keeps the count. (BROKEN_PUBLISH_STORE replaces it
 *     by a plain store.)
 *  R2 a reader whose try_get failed, or that saw FILLING, retries only once something
 *     it read changed (xlat[l], tag[e], the VALID/BUSY bits of state[e]): the retry
 *     would otherwise fail again identically. So a reader stuck forever (xlat and slot
 *     disagreeing for good) blocks, and SPIN reports it as an invalid end state. The
 *     timeout (-ETIMEDOUT) of those waits is not modelled.
 *  R3 the queue pair is abstracted (it is model-checked in qpair.pml): a command takes
 *     a FREE CID (waiting for one), and either completes in time (data moved, CID
 *     freed), with an error status, or times out: the waiter abandons the CID (BUSY ->
 *     ABANDONED), the controller moves the data later and posts the CQE, and a CQ head
 *     mover (the controller process, or bam_pend_done's help) then frees the CID.
 *     A submission timeout (BAM_PEND_NOCID) either queued nothing or queued the command
 *     under an abandoned CID it did not return. At most MAXTO timeouts per run.
 *  R4 one array; line data is a ghost: data[s] = which line the slot's bytes hold
 *     (JUNK while a transfer into it is half done).
 *
 * Properties:
 *  (1) a reader that got a slot sees its line there (data[s] == l), and no transfer
 *      writes a slot while a reader uses it (users[s] == 0 at every data write);
 *      a write-back reads the line it writes (data[s] == line);
 *  (2) the state word's count equals the references taken and not given back (ghost
 *      gcnt: real + transient); the clock locks only unreferenced slots;
 *  (3) whenever xlat[l] == s and s is VALID and not BUSY, s holds l; no two VALID,
 *      not BUSY slots hold the same line (monitor, every state); at the end no xlat
 *      entry is FILLING, every mapped line is in its slot, every VALID slot is mapped,
 *      no slot is BUSY or referenced; after a final host reclaim no slot is held;
 *  (6) a reader sees the newest store of its line (ghost versions lver/dver/media:
 *      never the stale media while a write-back of the line is in flight);
 *  (7) at the end every mapped line's slot holds its newest store, a clean one is on
 *      the media too, and an unmapped line is on the media (no write lost; a failed
 *      write-back left its line dirty); no slot is WRITING (every write reaped);
 *  (5) a timed-out command's slot is not given back (gen[s] bumped by the give-back)
 *      before the controller has finished moving data into / out of it; no second
 *      write of a line is issued while an earlier one is in flight;
 *  and: no process blocked forever (invalid end state).
 *
 * Options: NS slots, NL lines (2 or 3), NT reader/filler threads, NA accesses each, MAXTO
 * timeouts; WRITES (threads also store into the line, a new version, and mark it dirty);
 * a dirty victim is written back asynchronously (bam_cache_wb_start / _reap:
 * BAM_SLOT_WRITING) while the fill takes another victim; FLUSH (a flusher runs
 * bam_cache_flush_slot over every slot; slot 0 starts holding line 0 dirty; no writes,
 * as bam_cache_flush requires); RECLAIMER (a host thread runs bam_cache_reclaim);
 * NOERR (no error statuses, only OK and timeouts).
 *
 * Broken variants (each must be caught):
 *  BROKEN_FLUSH_PIN_LOOP  flush_slot's pinned wait loop ignores a slot that
 *                         bam_cache_slot_reclaim returned locked (a real bug this model
 *                         found, fixed in array.h: the slot stayed BUSY with no owner)
 *  BROKEN_PUBLISH_STORE   the fill publishes with a plain store (count dropped)
 *  BROKEN_VICTIM_NOCNT    the clock locks a slot without checking its count
 *  BROKEN_NO_TAGCHECK     try_get does not check the tag
 *  BROKEN_RECLAIM_EARLY   bam_pend_done always says "complete"
 *  BROKEN_RECLAIM_NOLOCK  reclaim gives a retired slot back on the unlocked look only
 *                         (no re-read of the record under the lock)
 *  BROKEN_WB_UNMAP        the asynchronous write-back unmaps the line at submission
 *                         (slot freed at the reap): a miss meanwhile reads stale media
 *  BROKEN_WB_SAMESLOT     the fill reads its line into the slot whose write-back it
 *                         just submitted, without waiting for the write
 *  BROKEN_RETIRE_CAS0     reclaim locks a retired slot with a plain store of BUSY,
 *                         whatever its count (a transient count dropped)
 */

#ifndef NS
#define NS 2
#endif
#ifndef NL
#define NL 2
#endif
#ifndef NT
#define NT 2
#endif
#ifndef NA
#define NA 2
#endif
#ifndef MAXTO
#define MAXTO 1
#endif
#define NCID 2

#ifdef FLUSH
#define NFL 1
#else
#define NFL 0
#endif
#ifdef RECLAIMER
#define NRC 1
#else
#define NRC 0
#endif
#define NPROC (NT + NFL + NRC)

/* state word (array.h:37-43), count in the low byte */
#define CNT     255
#define V       256
#define B       512
#define DT      1024
#define RF      2048
#define PN      4096
#define RT      8192
#define WRT     16384       /* BAM_SLOT_WRITING: its write-back in flight */
#define FLAGMASK 32512
#define ALL     65535
#define RETIRED (B | RT)

#define NONE    255         /* BAM_XLAT_NONE / BAM_TAG_NONE */
#define FILLING 254         /* BAM_XLAT_FILLING */
#define FAILED  253         /* BAM_XLAT_EIO / _ETIMEDOUT / _EBUSY: the last fill failed */
#define JUNK    200         /* slot bytes half written by a transfer */

#define CID_FREE      0
#define CID_BUSY      1
#define CID_ABANDONED 2

#define NOCIDREC 100        /* pending[]: BAM_PEND_NOCID; 1 + cid for a CID record */

#define OK  0
#define ERR 1
#define TO  2
#define EBUSY 3

#define RD 0
#define WR 1

#define C_IDLE 0
#define C_SUB  1            /* submitted, timed out: data not moved yet */
#define C_POST 2            /* data moved, CQE posted: the head mover may pass it */

/* ---- cache (struct bam_cache_dev) ---------------------------------------------- */
int  state[NS];
byte tag[NS];
byte xlat[NL];
byte pending[NS];
byte hand;                  /* modulo NS */

/* ---- queue pair, abstracted (R3) ----------------------------------------------- */
byte cid_state[NCID];
byte cphase[NCID];
bit  ckind[NCID];
byte cslot[NCID];
byte cline[NCID];
byte cgen[NCID];
bit  cerr[NCID];            /* a write completed with an error status (nothing moved) */

/* ---- ghosts --------------------------------------------------------------------- */
byte data[NS];              /* line the slot's bytes hold */
byte gcnt[NS];              /* references taken and not given back (real + transient) */
byte users[NS];             /* readers using the slot (real references) */
byte gen[NS];               /* bumped when a retired/pinned slot is given back */
bool wb_late[NL];           /* a write of the line is in flight (timed out, or asynchronous) */
byte lver[NL];              /* version of the line's newest store (0: what the media held first) */
byte media[NL];             /* version the media holds */
byte dver[NS];              /* version the slot's bytes hold */
byte ntimeouts;
byte ndone;

/* ---- invariants, checked in every state by the monitor ------------------------- */
#define PUB(s) ((state[s] & (V | B)) == V)
#define INV_SLOT(s) ((state[s] & CNT) == gcnt[s] && users[s] <= gcnt[s] && state[s] >= 0 && state[s] < 32768)
#define INV_MAP(l, s) (!(xlat[l] == s && PUB(s)) || tag[s] == l)
#define INV_DUP(a, b) (!(PUB(a) && PUB(b) && tag[a] == tag[b] && tag[a] != NONE))
#if NL == 3
#define INV_L2(s) INV_MAP(2, s)
#else
#define INV_L2(s) true
#endif
#if NS == 1
#define INV (INV_SLOT(0) && INV_MAP(0, 0) && INV_MAP(1, 0) && INV_L2(0))
#elif NS == 2
#define INV (INV_SLOT(0) && INV_SLOT(1) && INV_MAP(0, 0) && INV_MAP(1, 0) && INV_MAP(0, 1) && INV_MAP(1, 1) && INV_DUP(0, 1) && \
	     INV_L2(0) && INV_L2(1))
#elif NS == 3
#define INV (INV_SLOT(0) && INV_SLOT(1) && INV_SLOT(2) && INV_MAP(0, 0) && INV_MAP(1, 0) && INV_MAP(0, 1) && \
	     INV_MAP(1, 1) && INV_MAP(0, 2) && INV_MAP(1, 2) && INV_DUP(0, 1) && INV_DUP(0, 2) && INV_DUP(1, 2))
#endif

active proctype Monitor()
{
end:	atomic { !(INV) -> assert(INV) }
}

/* ---- the slot protocol -------------------------------------------------------------- */

/* bam_slot_set_flags (:283-293), R1: one RMW keeping the count */
inline set_flags(s_, flags_, add_)
{
	atomic { state[s_] = (((state[s_] & CNT) + add_) & CNT) | flags_; gcnt[s_] = gcnt[s_] + add_ }
}

/* CQ head mover (bam_qpair_cq_try_advance): pass posted CQEs of abandoned CIDs */
#define HEAD_CAN_PASS(c) (cphase[c] == C_POST && cid_state[c] == CID_ABANDONED)
inline head_pass()
{
	atomic {
		if :: HEAD_CAN_PASS(0) -> cid_state[0] = CID_FREE; cphase[0] = C_IDLE; cerr[0] = 0 :: else fi;
		if :: HEAD_CAN_PASS(1) -> cid_state[1] = CID_FREE; cphase[1] = C_IDLE; cerr[1] = 0 :: else fi
	}
}

/* bam_pend_done (:235-251): in rrec, rhelp; out pd */
inline pend_done()
{
#ifdef BROKEN_RECLAIM_EARLY
	pd = 1;
#else
	if
	:: rrec == 0 -> pd = 1
	:: else ->
		if :: rhelp -> head_pass() :: else fi;            /* :240-241 */
		if
		:: rrec == NOCIDREC ->                            /* :242-248 */
			if
			:: !rhelp -> pd = 0
			:: else ->
				pd = 1; ci = 0;
				do
				:: ci < NCID && cid_state[ci] == CID_ABANDONED -> pd = 0; break
				:: ci < NCID && cid_state[ci] != CID_ABANDONED -> ci++
				:: ci >= NCID -> break
				od
			fi
		:: else -> pd = (cid_state[rrec - 1] != CID_ABANDONED)  /* :250 */
		fi
	fi
#endif
}

/* bam_cache_slot_reclaim (:304-334): in rs, rhelp; out rret */
inline reclaim()
{
	rret = 0;
	rst = state[rs];                                          /* :306 */
	if
	:: (rst & FLAGMASK) == RETIRED ->                         /* :307 */
		rrec = pending[rs];
		if
#ifndef BROKEN_RETIRE_CAS0
		:: (rst & CNT) != 0 -> skip                       /* :309 */
		:: (rst & CNT) == 0 ->
#else
		:: true ->
#endif
			pend_done();
			if
			:: pd ->
				atomic {                          /* :311 */
					if
#ifdef BROKEN_RETIRE_CAS0
					:: (state[rs] & FLAGMASK) == RETIRED -> gcnt[rs] = gcnt[rs] - (state[rs] & CNT); state[rs] = B; rlock = 1
#else
					:: state[rs] == rst -> state[rs] = B; rlock = 1
#endif
					:: else -> rlock = 0
					fi
				}
				if
				:: rlock ->
#ifndef BROKEN_RECLAIM_NOLOCK
					rrec = pending[rs];       /* :313 */
					pend_done();
#endif
					if
					:: !pd -> set_flags(rs, RETIRED, 0)          /* :314 */
					:: pd -> atomic { pending[rs] = 0; gen[rs]++; rret = 1 }  /* :317-318 */
					fi
				:: else
				fi
			:: else
			fi
		fi
	:: (rst & (PN | B)) == PN ->                              /* :320 */
		rrec = pending[rs];
		pend_done();                                      /* :321 */
		if
		:: pd ->
			atomic {                                  /* :324 */
				if
				:: state[rs] == rst -> state[rs] = rst | B; rlock = 1
				:: else -> rlock = 0
				fi
			}
			if
			:: rlock ->
				rclear = B;
				rrec = pending[rs];
				pend_done();                      /* :327 */
				if
				:: pd -> atomic { pending[rs] = 0; rclear = B | PN }   /* :328-329 */
				:: else
				fi;
				atomic {                          /* :331 */
					state[rs] = state[rs] & (ALL - rclear);
					if :: rclear & PN -> gen[rs]++ :: else fi
				}
			:: else
			fi
		:: else
		fi
	:: else
	fi;
	atomic { rst = 0; rrec = 0; pd = 0; rlock = 0; rclear = 0; ci = 0 }
}

/* Take a FREE CID (R3; the real submit waits for a credit and a CID) */
#define TAKE_CID (cid_state[0] == CID_FREE || cid_state[1] == CID_FREE)
inline take_cid()
{
	if
	:: cid_state[0] == CID_FREE -> cc = 0
	:: cid_state[1] == CID_FREE -> cc = 1
	fi;
	cid_state[cc] = CID_BUSY
}

/* a timed-out command: the controller still moves its data later */
inline submit_late()
{
	atomic {
		TAKE_CID -> take_cid();
		cphase[cc] = C_SUB; ckind[cc] = io_op; cslot[cc] = io_s; cline[cc] = io_line; cgen[cc] = gen[io_s];
		if :: io_op == WR -> wb_late[io_line] = 1 :: else fi
	}
	cid_state[cc] = CID_ABANDONED                             /* the waiter's CAS, qpair.h */
}

/* bam_array_line_io (:183-217) for one replica: in io_op, io_line, io_s; out iorc */
inline line_io()
{
	if :: io_op == WR -> assert(!wb_late[io_line]) :: else fi;   /* two writes of one line in flight */
	if
	:: iorc = OK
#ifndef NOERR
	:: iorc = ERR
#endif
	:: atomic { ntimeouts < MAXTO -> ntimeouts++ }; iorc = TO
	fi;
	if
	:: iorc != TO ->
		atomic { TAKE_CID -> take_cid() };
		if
		:: io_op == RD ->
			atomic { assert(users[io_s] == 0); data[io_s] = JUNK };
			if :: iorc == OK -> atomic { assert(users[io_s] == 0); data[io_s] = io_line; dver[io_s] = media[io_line] } :: else fi
		:: io_op == WR -> atomic { assert(data[io_s] == io_line); if :: iorc == OK -> media[io_line] = dver[io_s] :: else fi }
		fi;
		cid_state[cc] = CID_FREE
	:: iorc == TO ->
		if
		:: submit_late(); pending[io_s] = cc + 1           /* :206-207, CID known */
		:: if
		   :: submit_late()                                /* queued, CID not returned */
		   :: skip                                         /* nothing queued */
		   fi;
		   pending[io_s] = NOCIDREC
		fi
	fi;
	cc = 0
}

/* bam_cache_pick_victim (:339-364): out vs (slot or -1) */
inline pick_victim()
{
	iter = 0; k = 0; vs = -1;
	do
	:: k < 2 * NS ->
		atomic { ps = hand; hand = (hand + 1) % NS };     /* :345 */
		st = state[ps];                                   /* :346 */
		if
#ifdef BROKEN_VICTIM_NOCNT
		:: (st & (B | PN | WRT)) != 0 ->
#else
		:: (st & (B | PN | WRT)) != 0 || (st & CNT) != 0 ->     /* :347 */
#endif
			if
			:: (st & (RT | PN)) != 0 ->               /* :348 */
				rs = ps; rhelp = (iter > 0); reclaim();
				if :: rret -> vs = ps :: else fi
			:: else
			fi
		:: else ->
			if
			:: (st & RF) != 0 ->                      /* :352-354 */
				state[ps] = state[ps] & ~RF       /* one atomic and */
			:: else ->                                /* :356 */
				atomic {
					if
					:: state[ps] == st -> state[ps] = st | B; vs = ps;
						assert(users[ps] == 0)
					:: else
					fi
				}
			fi
		fi;
		if :: vs >= 0 -> break :: else -> k++ fi
	:: k >= 2 * NS ->                                         /* :360-362 */
		if
		:: once -> break                                  /* -EAGAIN: reap our write instead */
		:: !once && iter == 0 -> iter = 1; k = 0
		:: !once && iter > 0 -> break                     /* -EBUSY at the deadline */
		:: !once && iter > 0 -> k = 0
		fi
	od;
	atomic { k = 0; iter = 0; ps = 0; st = 0; rs = 0; rret = 0; rhelp = 0 }
}

/* bam_cache_evict_locked (:368-395): in es; out erc */
inline evict_locked()
{
	et = tag[es];                                             /* :370 */
	est = state[es];                                          /* :371 */
	if
	:: et == NONE || (est & V) == 0 -> erc = OK               /* :372-373 */
	:: else ->
		erc = OK;
		if
		:: (est & DT) != 0 ->                             /* :376-390 */
			io_op = WR; io_line = et; io_s = es; line_io(); erc = iorc;
			if :: erc == TO -> atomic { state[es] = state[es] | PN } :: else fi
		:: else
		fi;
		if
		:: erc == OK -> xlat[et] = NONE; tag[es] = NONE   /* :391-392 */
		:: else
		fi
	fi;
	atomic { et = 0; est = 0; es = 0; io_op = 0; io_line = 0; io_s = 0; iorc = 0 }
}

/* bam_cache_wb_start: slot vs (locked, VALID|DIRTY) written back without waiting:
 * the controller moves the data (xfer, any time) while the thread goes on; the slot
 * turns WRITING, unlocked, still mapped (hits served from it). A submission that
 * fails is the synchronous path's business (not modelled here: wb_start then leaves
 * the slot locked and dirty, as evict_locked's failure). */
inline wb_start()
{
	wl = tag[vs]; ws = vs;
	atomic {
		TAKE_CID -> take_cid(); wc = cc;
		assert(!wb_late[wl]);                             /* two writes of one line in flight */
		cphase[wc] = C_SUB; ckind[wc] = WR; cslot[wc] = ws; cline[wc] = wl; cgen[wc] = gen[ws]; wb_late[wl] = 1
	};
	cc = 0;
#ifdef BROKEN_WB_UNMAP
	/* the line counted as evicted at the write's submission: a miss reads the media,
	 * which the write has not reached yet */
	xlat[wl] = NONE;
	atomic { state[ws] = (state[ws] & CNT) | WRT }
#else
	atomic { state[ws] = (state[ws] & (ALL - B - DT)) | WRT }
#endif
}

/* bam_cache_wb_reap: the submitter waits for its write's completion: success (the data
 * moved), an error status (nothing moved), or a timeout (abandoned, moved later) */
inline wb_reap()
{
	if
	:: atomic { cphase[wc] == C_POST -> wrc = (cerr[wc] -> ERR : OK); cid_state[wc] = CID_FREE; cphase[wc] = C_IDLE; cerr[wc] = 0 }
	:: atomic { ntimeouts < MAXTO && cid_state[wc] == CID_BUSY -> ntimeouts++; cid_state[wc] = CID_ABANDONED }; wrc = TO
	fi;
#ifdef BROKEN_WB_UNMAP
	atomic { state[ws] = state[ws] & CNT; tag[ws] = NONE; data[ws] = NONE }
#else
	if
	:: wrc == OK -> atomic { state[ws] = state[ws] & (ALL - WRT) }
	:: wrc == ERR -> atomic { state[ws] = (state[ws] | DT) & (ALL - WRT) }
	:: wrc == TO -> pending[ws] = wc + 1; atomic { state[ws] = (state[ws] | DT | PN) & (ALL - WRT) }
	fi;
#endif
	atomic { wlive = 0; wrc = 0; wc = 0; ws = 0; wl = 0 }
}

/* the miss path of bam_array_line_acquire (:418-452), line lock held: out r */
inline fill()
{
	once = 0;
	pick_victim();
	if
	:: vs >= 0 && (state[vs] & (V | DT)) == (V | DT) && tag[vs] != NONE ->
		/* a dirty victim: its write goes out, the fill takes another slot */
		wb_start(); wlive = 1;
#ifdef BROKEN_WB_SAMESLOT
		/* the read submitted right behind the write, into the same slot */
		atomic { state[ws] = state[ws] | B }
#else
		once = 1; pick_victim(); once = 0;
		if
		:: vs < 0 -> wb_reap(); pick_victim()
		:: else
		fi
#endif
	:: else
	fi;
	if
	:: vs < 0 -> frc = EBUSY
	:: else ->
		es = vs; evict_locked();
		if
		:: erc != OK -> atomic { state[vs] = state[vs] & (ALL - B) }; frc = erc   /* :429 */
		:: else ->
			tag[vs] = l;                              /* :431 */
			io_op = RD; io_line = l; io_s = vs; line_io(); frc = iorc;
			if
			:: frc != OK ->
				tag[vs] = NONE;                   /* :438 */
				if
				:: frc == TO -> set_flags(vs, RETIRED, 0)
				:: else -> set_flags(vs, 0, 0)
				fi
			:: else ->                                /* :441: publish with our reference */
#ifdef BROKEN_PUBLISH_STORE
				atomic { gcnt[vs] = gcnt[vs] - (state[vs] & CNT) + 1; state[vs] = V | RF | 1; users[vs]++ }
#else
				atomic { state[vs] = (((state[vs] & CNT) + 1) & CNT) | V | RF; gcnt[vs]++; users[vs]++ }
#endif
			fi
		fi
	fi;
	if
	:: frc == OK -> xlat[l] = vs; r = vs                      /* :445 */
	:: else -> xlat[l] = FAILED; r = -1                     /* its waiters fail with it */
	fi;
	if :: wlive -> wb_reap() :: else fi                       /* after the publish */
}

/* bam_array_line_acquire (:403-462) with n = 1: in l; out r */
inline line_acquire()
{
	r = -1; fin = 0;
	do
	:: fin -> break
	:: !fin ->
		e = xlat[l];                                      /* :412 */
		if
		:: e < NS ->                                      /* try_get :265-277 */
			atomic { old = state[e]; state[e] = old + 1; gcnt[e]++ };
			atomic {
				t = tag[e];
#ifdef BROKEN_NO_TAGCHECK
				ok = ((old & (V | B)) == V);
#else
				ok = ((old & (V | B)) == V && t == l);
#endif
				if :: ok -> users[e]++ :: else fi
			}
			if
			:: ok ->
				if :: (old & RF) == 0 -> atomic { state[e] = state[e] | RF } :: else fi;
				r = e; fin = 1
			:: else ->
				atomic { state[e] = state[e] - 1; gcnt[e]-- };   /* :271 */
				/* R2: retry once something it read changed */
				atomic { (xlat[l] != e || tag[e] != t || (state[e] & (V | B)) != (old & (V | B))) -> t = 0; old = 0; e = 0 }
			fi
		:: e == FAILED && sawf -> r = -1; fin = 1                  /* the fill it waited for failed */
		:: e == NONE || (e == FAILED && !sawf) ->
			atomic { if :: xlat[l] == e -> xlat[l] = FILLING; got = 1 :: else -> got = 0 fi };
			if :: got -> fill(); fin = 1 :: else fi
		:: e == FILLING -> sawf = 1; (xlat[l] != FILLING)         /* R2 */
		fi
	od
}

/* scratch locals back to 0 once an access is over (smaller state vectors) */
#define RESET_SCRATCH once = 0; e = 0; t = 0; k = 0; iter = 0; ps = 0; rs = 0; es = 0; et = 0; io_op = 0; io_line = 0; \
	io_s = 0; iorc = 0; erc = 0; frc = 0; cc = 0; ci = 0; rrec = 0; fin = 0; vs = 0; st = 0; old = 0; \
	rst = 0; est = 0; rclear = 0; ok = 0; got = 0; rret = 0; rlock = 0; pd = 0; rhelp = 0; sawf = 0

#define LOCALS \
	byte l, e, t, k, iter, ps, rs, es, et, io_op, io_line, io_s, iorc, erc, frc, cc, ci, rrec, fin, wc, ws, wl, wrc; \
	int r, vs, st, old, rst, est, rclear; \
	bool ok, got, rret, rlock, pd, rhelp, sawf, once, wlive

proctype Thread()
{
	LOCALS;
	byte n = 0;
	do
	:: n < NA ->
		select (l : 0 .. NL - 1);
		line_acquire();
		if
		:: r >= 0 ->
			assert(data[r] == l && tag[r] == l);       /* (1): the element read */
			assert(dver[r] == lver[l]);                /* (6): the newest store, never stale media */
#ifdef WRITES
			if
			:: skip
			:: atomic { lver[l]++; dver[r] = lver[l] };   /* a store */
			   if
			   :: (state[r] & DT) == 0 -> atomic { state[r] = state[r] | DT }   /* mark_dirty :649-653 */
			   :: (state[r] & DT) != 0 -> skip
			   fi
			fi;
#endif
			atomic { state[r] = state[r] - 1; gcnt[r]--; users[r]--; RESET_SCRATCH; r = 0; l = 0; n++ }  /* bam_slot_put */
		:: else -> atomic { RESET_SCRATCH; r = 0; l = 0; n++ }
		fi
	:: n >= NA -> break
	od;
	ndone++
}

#ifdef FLUSH
/* bam_cache_flush (one thread over every slot) with bam_cache_flush_slot (:835-873) */
proctype Flusher()
{
	LOCALS;
	byte s = 0;
	bool again, stop;
	do
	:: s < NS ->
		again = 1;
		do
		:: again ->
			again = 0; stop = 0;
			st = state[s];                            /* :839 */
			if
			:: (st & RT) != 0 ->                      /* :840-844 */
				rs = s; rhelp = 1; reclaim();
				if :: rret -> set_flags(s, 0, 0) :: else fi;
				stop = 1
			:: else
			fi;
			if
			:: (st & WRT) != 0 ->                     /* a write-back in flight: wait for its reap */
				if
				:: (state[s] & WRT) == 0 -> again = 1
				:: stop = 1                       /* deadline: -ETIMEDOUT */
				fi;
				stop = 1
			:: else
			fi;
			if
			:: !stop && (st & PN) != 0 ->             /* :845-854 */
				do
				:: st = state[s];
				   if
				   :: (st & PN) == 0 -> break
				   :: else ->
					if
					:: stop = 1; break        /* deadline: -ETIMEDOUT */
					:: rs = s; rhelp = 1; reclaim();
#ifndef BROKEN_FLUSH_PIN_LOOP
					   /* a slot retired and given back meanwhile is ours: release it */
					   if :: rret -> set_flags(s, 0, 0) :: else fi
#else
					   skip  /* the old code ignored the return value */
#endif
					fi
				   fi
				od
			:: else
			fi;
			if
			:: !stop && (st & (V | DT | B)) == (V | DT) ->    /* :855-856 */
				atomic {
					if
					:: state[s] == st -> state[s] = st | B; rlock = 1
					:: else -> rlock = 0
					fi
				}
				if
				:: !rlock -> again = 1                    /* -EAGAIN */
				:: rlock ->
					et = tag[s];
					io_op = WR; io_line = et; io_s = s; line_io();
					if
					:: iorc != OK ->
						if :: iorc == TO -> atomic { state[s] = state[s] | PN } :: else fi;
						atomic { state[s] = state[s] & (ALL - B) }
					:: else -> atomic { state[s] = state[s] & (ALL - B - DT) }
					fi
				fi
			:: else
			fi
		:: !again -> break
		od;
		s++
	:: s >= NS -> break
	od;
	ndone++
}
#endif

#ifdef RECLAIMER
/* bam_cache_reclaim on the CPU target (src/core/cache.c:222-228), concurrently */
proctype Reclaimer()
{
	LOCALS;
	byte s = 0;
	do
	:: s < NS -> rs = s; rhelp = 1; reclaim(); if :: rret -> set_flags(s, 0, 0) :: else fi; s++
	:: s >= NS -> break
	od;
	ndone++
}
#endif

/* the controller's late data movement for timed-out commands, and a CQ head mover */
inline xfer(c)
{
	if
	:: ckind[c] == RD ->
		atomic { assert(gen[cslot[c]] == cgen[c] && users[cslot[c]] == 0); data[cslot[c]] = JUNK };
		atomic { assert(gen[cslot[c]] == cgen[c] && users[cslot[c]] == 0); data[cslot[c]] = cline[c]; dver[cslot[c]] = media[cline[c]]; cphase[c] = C_POST }
	:: ckind[c] == WR ->
		atomic { assert(gen[cslot[c]] == cgen[c] && data[cslot[c]] == cline[c]); wb_late[cline[c]] = 0; media[cline[c]] = dver[cslot[c]]; cphase[c] = C_POST }
#ifndef NOERR
	:: ckind[c] == WR ->                                      /* an error status: nothing written */
		atomic { assert(gen[cslot[c]] == cgen[c]); wb_late[cline[c]] = 0; cerr[c] = 1; cphase[c] = C_POST }
#endif
	fi
}

active proctype Controller()
{
	LOCALS;
	byte s;
	do
	:: cphase[0] == C_SUB -> xfer(0)
	:: cphase[1] == C_SUB -> xfer(1)
	:: HEAD_CAN_PASS(0) || HEAD_CAN_PASS(1) -> head_pass()
	:: ndone == NPROC && cphase[0] == C_IDLE && cphase[1] == C_IDLE -> break
	od;
	/* quiescent end: (3) and liveness of the give-back */
	atomic {
		l = 0;
		do
		:: l < NL ->
			assert(xlat[l] != FILLING);
			if
			:: xlat[l] < NS -> assert((state[xlat[l]] & V) && tag[xlat[l]] == l && data[xlat[l]] == l);
				/* (7) the slot holds the newest store; a clean one is on the media */
				assert(dver[xlat[l]] == lver[l]);
				assert((state[xlat[l]] & DT) || media[l] == lver[l])
			:: else -> assert(media[l] == lver[l])     /* (7) nothing lost */
			fi;
			l++
		:: l >= NL -> break
		od;
		s = 0;
		do
		:: s < NS ->
			assert((state[s] & CNT) == 0 && gcnt[s] == 0 && users[s] == 0);
			assert((state[s] & B) == 0 || (state[s] & FLAGMASK) == RETIRED);
			assert((state[s] & WRT) == 0);             /* every write-back reaped */
			if
			:: (state[s] & V) -> assert(tag[s] < NL && xlat[tag[s]] == s && data[s] == tag[s])
			:: else -> assert(tag[s] == NONE)
			fi;
			s++
		:: s >= NS -> break
		od
	}
	/* a final bam_cache_reclaim: every timed-out command has completed, so no slot
	 * may stay retired or pinned */
	s = 0;
	do
	:: s < NS -> rs = s; rhelp = 1; reclaim(); if :: rret -> set_flags(s, 0, 0) :: else fi;
		assert((state[s] & (RT | PN | B)) == 0); s++
	:: s >= NS -> break
	od
}

init
{
	byte i;
	atomic {
		i = 0;
		do
		:: i < NS -> tag[i] = NONE; data[i] = NONE; i++
		:: i >= NS -> break
		od;
		i = 0;
		do
		:: i < NL -> xlat[i] = NONE; i++
		:: i >= NL -> break
		od;
#ifdef FLUSH
		/* slot 0 holds line 0, dirty */
		state[0] = V | DT; tag[0] = 0; data[0] = 0; xlat[0] = 0; lver[0] = 1; dver[0] = 1;
#endif
		i = 0;
		do
		:: i < NT -> run Thread(); i++
		:: i >= NT -> break
		od;
#ifdef FLUSH
		run Flusher();
#endif
#ifdef RECLAIMER
		run Reclaimer();
#endif
	}
}
