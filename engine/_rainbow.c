/* Rainbow Canfield's search (solver_rainbow.RainbowModel.search) in C.
 *
 * The same model and the same search as solver_rainbow.py, move for move and in the same
 * order, so that both expand the same states and reach the same verdict on a budget of
 * states (tests/engine/test_solver_rainbow.py compares them): the moves and the safe
 * moves of RainbowModel.expand and _settle, its cuts (_dead, _cyclic), the best-first
 * search with dives, then the depth-first search from the queued states (the module's
 * docstring has the proofs). What differs is the storage: a queued state is kept as a
 * short string of bytes (the waste is left out and found again from the rest, as the key
 * leaves it out), and the table of states seen holds a 128-bit digest of each state's key
 * (16 bytes, and a slot of 4 at most 3/4 full), with the state it came from for the states
 * the best-first search records (4 bytes more): some 25 bytes a state where a Python dict
 * of bytes keys holds about 200. The line to a win is found again by expanding the states
 * from the root, matching each digest: the best-first search's along the chain of
 * parents, then the depth-first search's from its stack.
 *
 * A child is built in place in the array of children, its digest kept up to date move by
 * move (no sorting, no hashing of the whole key), and it is recorded when the search comes
 * to it, its slot of the table fetched ahead (the table's reads, at random places, are
 * most of the search's waits on memory).
 *
 * A search ends as the Python one does (a win, the queue run out, max_nodes states, the
 * process's CPU clock past the deadline) or when its memory would pass max_bytes.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef __linux__
#include <sys/mman.h>
#endif

#define NC 52
#define TO_FOUNDATION (-2)
#define TO_EMPTY (-1)
#define DIVE 40
#define CLOCK_EVERY 256
#define NO_PARENT UINT32_MAX

typedef struct {
    uint64_t za, zb;   /* the digest of the piles (digest), kept up to date as they change */
    uint64_t covered; /* bit c: card c is in a pile with a card on it */
    uint64_t lifted;  /* bit c: card c is in a pile above the pile's bottom card */
    uint8_t n[4];
    uint8_t found[4];
    uint8_t rc, sp, nw;
    uint8_t p[4][NC];
    uint8_t w[NC];
} Full;

typedef struct {
    int8_t card, count, target;
} Act;

typedef struct {
    Act merge; /* count 0: none */
    uint8_t draws;
    Act play;
    uint8_t nsettle;
    uint8_t settle[NC];
} Acts;

typedef struct {
    uint64_t h1, h2;
} Digest;

typedef struct {
    uint64_t prio;
    uint32_t off;   /* where the state is in the arena */
    uint32_t entry; /* its entry in the table */
} HeapItem;

typedef struct {
    Full s;
    uint64_t h1, h2;
} Kid;

/* What emit does with a child: collect it in the kids' array (both searches), or look for
 * the one with a given digest (line). */
enum { MODE_COLLECT, MODE_FIND };

typedef struct {
    /* the deal */
    uint8_t rel[NC];
    uint8_t at[NC];
    uint64_t leads; /* bit c: card c is of the lead rank */
    uint8_t reserve[NC];
    uint8_t stock[NC];
    int nstock;
    uint8_t base[2 * NC]; /* the root's waste, then the stock: the waste's cards in order */
    int nbase0;
    /* the table: open addressing over ``cap`` (2 ** ``ibits``) slots of 32 bits; a slot
     * holds the entry's index + 1 in its low ``ibits`` bits (fewer entries than slots) and
     * a fingerprint of the digest in the rest, so that a probe reads the entries only when
     * the fingerprints match */
    uint32_t *slots;
    size_t cap;
    int ibits;
    int full_size; /* the table may not double (memory): it fills on (table_packed) */
    Digest *eh;
    size_t ecount, ecap;
    /* the state each entry came from, kept while ``parents`` is set: for the best-first
     * search's entries (and the root's), which the queue may hold; the depth-first search
     * keeps the line to its states on its stack (tail) */
    uint32_t *eparent;
    size_t pcount, pcap;
    int parents;
    /* the queue of states, and the arena of their bytes */
    HeapItem *heap;
    size_t hlen, hcap;
    uint8_t *arena;
    size_t alen, acap;
    uint64_t seq;
    /* the children of the states under expansion (of the one expanded by the best-first
     * search; of each state on the depth-first search's stack, one after another) */
    Kid *kids;
    size_t klen, kcap;
    size_t max_kids; /* the most children a state has (expand) */
    /* limits */
    size_t max_bytes;
    int over; /* memory would pass max_bytes */
    /* the expansion under way */
    int mode;
    int won;
    uint32_t won_entry; /* with parents */
    Digest *tail;       /* a win of the depth-first search: the digests from won_entry on */
    size_t ntail;
    uint64_t fh1, fh2; /* MODE_FIND: the digest looked for */
    int found;
    Full found_state;
    Acts found_acts;
} Ctx;

/* -- cards ---------------------------------------------------------------------------- */

/* Each card's suit, rank and the rank of the cards it goes on (one above, a King on an
 * Ace), looked up (filled by init_cards). */
static uint8_t SUIT[NC], RANK[NC], UP[NC];

static void init_cards(void) {
    for (int c = 0; c < NC; c++) {
        SUIT[c] = (uint8_t)(c / 13);
        RANK[c] = (uint8_t)(c % 13 + 1);
        UP[c] = (uint8_t)(RANK[c] % 13 + 1);
    }
}

static inline int suit(int c) { return SUIT[c]; }
static inline int rank(int c) { return RANK[c]; }
static inline int up(int c) { return UP[c]; }
static inline int fits(int c, int t) { return up(c) == rank(t); }

/* -- memory --------------------------------------------------------------------------- */

static size_t used(const Ctx *x) {
    return x->cap * sizeof(uint32_t) + x->ecap * sizeof(Digest) + x->pcap * sizeof(uint32_t) +
           x->hcap * sizeof(HeapItem) + x->acap + x->kcap * sizeof(Kid);
}

/* The capacity after ``cap`` for a buffer that grows: twice as much while it is small,
 * then an eighth more, so that a large one holds little more than it needs (realloc then
 * moves a large block's pages, not its bytes). */
static inline size_t more(size_t cap) {
    if (cap < 1024)
        return 1024;
    return cap < (1u << 20) ? cap * 2 : cap + cap / 8;
}

/* Grow ``*buf`` (of ``*cap`` items of ``size`` bytes) to hold ``need``; 0 if it may not. */
static int grow(Ctx *x, void **buf, size_t *cap, size_t need, size_t size) {
    if (need <= *cap)
        return 1;
    size_t ncap = *cap;
    while (ncap < need)
        ncap = more(ncap);
    if (used(x) + (ncap - *cap) * size > x->max_bytes) {
        x->over = 1;
        return 0;
    }
    void *nbuf = realloc(*buf, ncap * size);
    if (nbuf == NULL) {
        x->over = 1;
        return 0;
    }
    *buf = nbuf;
    *cap = ncap;
    return 1;
}

/* -- the table of states seen -------------------------------------------------------- */

/* The table's slots are read at random places, each a miss of the caches and, with pages
 * of 4 KiB, of the address translations too: a large table is mapped in huge pages where
 * the system has them (2 MiB: a table of 256 MiB in 128 of them), and zeroed by the
 * mapping itself. A small one comes from calloc. */
#define HUGE_PAGE ((size_t)1 << 21)

static void *table_alloc(size_t bytes) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (bytes >= HUGE_PAGE) {
        /* Map a huge page more than asked, then unmap the ends, so that the table starts
         * on a huge page's boundary. */
        size_t span = bytes + HUGE_PAGE;
        uint8_t *m = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED)
            return NULL;
        size_t head = (HUGE_PAGE - (uintptr_t)m % HUGE_PAGE) % HUGE_PAGE;
        if (head)
            munmap(m, head);
        if (span - head > bytes)
            munmap(m + head + bytes, span - head - bytes);
        madvise(m + head, bytes, MADV_HUGEPAGE); /* a wish: without it, plain pages */
        return m + head;
    }
#endif
    return calloc(1, bytes);
}

static void table_free(void *table, size_t bytes) {
    if (table == NULL)
        return;
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (bytes >= HUGE_PAGE) {
        munmap(table, bytes);
        return;
    }
#endif
    free(table);
}

/* A table fills to 3/4 of its slots before it doubles: a probe's run of full slots stays
 * short, and the slots, at 4 bytes, cost 5.3 to 10.7 bytes a state. One that may not
 * double for want of memory fills on to 7/8 (its probes slower, but the search goes on
 * to a seventh more states before it ends for memory). */
static inline int table_full(size_t count, size_t cap) { return count * 4 >= cap * 3; }
static inline int table_packed(size_t count, size_t cap) { return count * 8 >= cap * 7; }

/* The fingerprint of the digest for a table of 2 ** ``ibits`` slots: the top 32 - ``ibits``
 * bits of its high half (its low half gives the slot). */
static inline uint32_t fingerprint(uint64_t h2, int ibits) { return (uint32_t)(h2 >> (32 + ibits)); }

/* Double the table (or make the first): 0 if it may not (memory). */
static int rehash(Ctx *x) {
    size_t ncap = x->cap ? x->cap * 2 : (1u << 16);
    int nbits = x->cap ? x->ibits + 1 : 16;
    /* An entry's index + 1 must fit below the fingerprint, which keeps a bit at least. */
    if (nbits > 31 || used(x) + (ncap - x->cap) * sizeof(uint32_t) > x->max_bytes)
        return 0;
    uint32_t *ns = table_alloc(ncap * sizeof(uint32_t));
    if (ns == NULL)
        return 0;
    size_t mask = ncap - 1;
    for (size_t e = 0; e < x->ecount; e++) {
        size_t i = x->eh[e].h1 & mask;
        while (ns[i])
            i = (i + 1) & mask;
        ns[i] = fingerprint(x->eh[e].h2, nbits) << nbits | (uint32_t)(e + 1);
    }
    table_free(x->slots, x->cap * sizeof(uint32_t));
    x->slots = ns;
    x->cap = ncap;
    x->ibits = nbits;
    return 1;
}

/* The slot of the digest (h1, h2): the one that holds it, or the empty one where it
 * would go. */
static inline size_t probe(const Ctx *x, uint64_t h1, uint64_t h2) {
    size_t mask = x->cap - 1;
    int ibits = x->ibits;
    uint32_t fp = fingerprint(h2, ibits), s;
    size_t i = h1 & mask;
    while ((s = x->slots[i]) != 0) {
        if (s >> ibits == fp) {
            const Digest *d = &x->eh[(s & mask) - 1];
            if (d->h1 == h1 && d->h2 == h2)
                return i;
        }
        i = (i + 1) & mask;
    }
    return i;
}

/* Record a state: its entry, or -1 if it was seen before, -2 if memory would run out. */
static int64_t record(Ctx *x, uint64_t h1, uint64_t h2, uint32_t parent) {
    if (table_full(x->ecount + 1, x->cap) && (x->full_size || !rehash(x))) {
        x->full_size = 1;
        if (table_packed(x->ecount + 1, x->cap)) {
            x->over = 1;
            return -2;
        }
    }
    size_t i = probe(x, h1, h2);
    if (x->slots[i])
        return -1;
    if (!grow(x, (void **)&x->eh, &x->ecap, x->ecount + 1, sizeof(Digest)))
        return -2;
    if (x->parents) {
        if (!grow(x, (void **)&x->eparent, &x->pcap, x->pcount + 1, sizeof(uint32_t)))
            return -2;
        x->eparent[x->pcount++] = parent;
    }
    size_t e = x->ecount++;
    x->eh[e].h1 = h1;
    x->eh[e].h2 = h2;
    x->slots[i] = fingerprint(h2, x->ibits) << x->ibits | (uint32_t)(e + 1);
    return (int64_t)e;
}

/* -- a state's key and its digest ----------------------------------------------------- */

static inline uint64_t mix(uint64_t h) {
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ULL;
    h ^= h >> 33;
    return h;
}

/* The key's piles as a multiset are the set of pairs (card, the card under it, or none for
 * a pile's bottom card) over the cards in the piles: the pairs give each pile back in
 * order, and the four piles with no order among them, so nothing needs sorting. The
 * digest of the piles is the sum, in each half, of a random 128-bit number for each pair
 * (Zobrist hashing): any two different keys differ in some pair, so their digests are as
 * unlikely to meet as two random ones. ZOB[under][card] is the number of the pair, with
 * ``under`` BOTTOM for a pile's bottom card; the two halves sit side by side, one load. */
#define BOTTOM NC
static uint64_t ZOB[NC + 1][NC][2];

/* Fill ZOB, always with the same numbers (splitmix64 from a fixed seed). */
static void init_zob(void) {
    uint64_t z = 0x5eed0fca4f1e1d00ULL;
    for (int u = 0; u <= NC; u++)
        for (int c = 0; c < NC; c++)
            for (int h = 0; h < 2; h++) {
                z += 0x9e3779b97f4a7c15ULL;
                ZOB[u][c][h] = mix(z);
            }
}

static inline uint64_t bit(int c) { return (uint64_t)1 << c; }

/* What a state keeps of its piles besides the cards (the digest of the piles, the cards
 * covered and lifted), from scratch: for a state decoded or given. */
static void summarize(Full *s) {
    uint64_t a = 0, b = 0, covered = 0, lifted = 0;
    for (int i = 0; i < 4; i++) {
        const uint8_t *p = s->p[i];
        int under = BOTTOM;
        for (int j = 0; j < s->n[i]; j++) {
            a += ZOB[under][p[j]][0];
            b += ZOB[under][p[j]][1];
            if (j)
                lifted |= bit(p[j]);
            if (j + 1 < s->n[i])
                covered |= bit(p[j]);
            under = p[j];
        }
    }
    s->za = a;
    s->zb = b;
    s->covered = covered;
    s->lifted = lifted;
}

/* The piles' digest with the pair (card ``c``, ``under``) added (sign 1) or taken away (-1). */
static inline void zob(Full *s, int under, int c, uint64_t sign) {
    s->za += sign * ZOB[under][c][0];
    s->zb += sign * ZOB[under][c][1];
}

/* The card at the top of pile ``j``, or BOTTOM for an empty pile (what a card put there
 * lies on). */
static inline int top_of(const Full *s, int j) { return s->n[j] ? s->p[j][s->n[j] - 1] : BOTTOM; }

/* The piles' changes, each with the rest of summarize's: put ``c`` on pile ``j``; take pile
 * ``i``'s top card off; put pile ``i`` whole on pile ``j`` (not empty: its top card is then
 * covered, and ``i``'s bottom card lies on it). */
static inline void put(Full *s, int j, int c) {
    int t = top_of(s, j);
    zob(s, t, c, 1);
    if (t != BOTTOM) {
        s->covered |= bit(t);
        s->lifted |= bit(c);
    }
    s->p[j][s->n[j]++] = (uint8_t)c;
}

static inline void take(Full *s, int i) {
    int c = s->p[i][--s->n[i]];
    int t = top_of(s, i);
    zob(s, t, c, (uint64_t)-1);
    s->lifted &= ~bit(c);
    if (t != BOTTOM)
        s->covered &= ~bit(t);
}

static inline void merge_piles(Full *s, int i, int j) {
    int t = top_of(s, j);
    zob(s, BOTTOM, s->p[i][0], (uint64_t)-1);
    zob(s, t, s->p[i][0], 1);
    s->covered |= bit(t);
    s->lifted |= bit(s->p[i][0]);
    memcpy(s->p[j] + s->n[j], s->p[i], s->n[i]);
    s->n[j] = (uint8_t)(s->n[j] + s->n[i]);
    s->n[i] = 0;
}

/* The digest of the key: the piles as a multiset (above), the foundations, the reserve's
 * count and the stock's; the waste follows from them. The counts are put into each half
 * by a one-to-one function (mixed into the low half, which picks the table's slot), so
 * two keys with the same piles and different counts never share a digest. */
static inline void digest(const Full *s, uint64_t *h1, uint64_t *h2) {
    uint64_t counts = (uint64_t)s->found[0] | (uint64_t)s->found[1] << 8 |
                      (uint64_t)s->found[2] << 16 | (uint64_t)s->found[3] << 24 |
                      (uint64_t)s->rc << 32 | (uint64_t)s->sp << 40;
    *h1 = s->za ^ mix(counts ^ 0x243f6a8885a308d3ULL);
    *h2 = s->zb ^ counts;
}

/* -- the model (RainbowModel's methods, in the same order) -------------------------- */

/* RainbowModel._dead of the pile ``a`` with the cards ``b`` put on it (before the pile
 * is built, so that a dead one costs no copy of the state). */
static int dead(const Ctx *x, const uint8_t *a, int na, const uint8_t *b, int nb) {
    int low[4] = {13, 13, 13, 13};
    for (int k = 0; k < na; k++) {
        int c = a[k], s = suit(c), r = x->rel[c];
        if (r > low[s])
            return 1;
        low[s] = r;
    }
    for (int k = 0; k < nb; k++) {
        int c = b[k], s = suit(c), r = x->rel[c];
        if (r > low[s])
            return 1;
        low[s] = r;
    }
    return 0;
}

/* Some pile holds a wrap: a card of the lead rank with a card on it. */
static inline int wrapped(const Ctx *x, const Full *s) { return (s->covered & x->leads) != 0; }

static int cyclic(const Ctx *x, const Full *s) {
    int below[NC];
    int wa[NC], wb[NC], nwr = 0;
    for (int c = 0; c < NC; c++)
        below[c] = -1;
    for (int i = 0; i < 4; i++)
        for (int j = 1; j < s->n[i]; j++) {
            int lo = s->p[i][j - 1];
            below[s->p[i][j]] = lo;
            if (x->rel[lo] == 0) {
                wa[nwr] = suit(s->p[i][j]);
                wb[nwr] = suit(lo);
                nwr++;
            }
        }
    if (nwr == 0)
        return 0;
    int step[4] = {0, 0, 0, 0};
    int lows = 0;
    for (int k = 0; k < nwr; k++)
        lows |= 1 << wb[k];
    for (int b = 0; b < 4; b++) {
        if (!(lows >> b & 1))
            continue;
        int reach = 1 << b;
        for (int r = 0; r < 12; r++) {
            int more = 0;
            for (int t = 0; t < 4; t++)
                if (reach >> t & 1) {
                    int lo = below[x->at[t * 13 + r]];
                    if (lo >= 0)
                        more |= 1 << suit(lo);
                }
            reach |= more;
        }
        for (int k = 0; k < nwr; k++)
            if (reach >> wa[k] & 1)
                step[b] |= 1 << wb[k];
    }
    for (int b = 0; b < 4; b++) {
        int seen_ = step[b];
        for (int r = 0; r < 3; r++) {
            int more = 0;
            for (int t = 0; t < 4; t++)
                if (seen_ >> t & 1)
                    more |= step[t];
            seen_ |= more;
        }
        if (seen_ >> b & 1)
            return 1;
    }
    return 0;
}

static int safe(const Ctx *x, int c, const Full *s) {
    if (s->found[suit(c)] != x->rel[c])
        return 0;
    int below = (c % 13 + 12) % 13; /* the index in its suit of a card one rank below */
    for (int t = 0; t < 4; t++) {
        int d = t * 13 + below;
        if (s->found[t] > x->rel[d])
            continue;
        /* d lies in a pile above its bottom card */
        if (!(s->lifted >> d & 1))
            return 0;
    }
    return 1;
}

static inline int takes(const Ctx *x, const Full *s, int c) {
    return s->found[suit(c)] == x->rel[c];
}

static void settle(const Ctx *x, Full *s, Acts *a) {
    for (;;) {
        int c = -1;
        for (int i = 0; i < 4; i++) {
            if (s->n[i]) {
                int t = s->p[i][s->n[i] - 1];
                if (takes(x, s, t) && safe(x, t, s)) {
                    take(s, i);
                    c = t;
                    break;
                }
            }
        }
        if (c < 0) {
            int t = s->rc ? x->reserve[s->rc - 1] : -1;
            if (t >= 0 && takes(x, s, t) && safe(x, t, s)) {
                s->rc--;
                c = t;
            } else {
                t = s->nw ? s->w[s->nw - 1] : -1;
                if (t >= 0 && takes(x, s, t) && safe(x, t, s)) {
                    s->nw--;
                    c = t;
                } else {
                    return;
                }
            }
        }
        s->found[suit(c)]++;
        a->settle[a->nsettle++] = (uint8_t)c;
    }
}

static inline int banked(const Full *s) {
    return s->found[0] + s->found[1] + s->found[2] + s->found[3];
}

static inline int score(const Full *s) { return 15 * s->nw + 2 * s->rc - 10 * banked(s); }

/* -- the queue -------------------------------------------------------------------------- */

static int push(Ctx *x, const Full *s, int sc, uint32_t entry) {
    int t = s->n[0] + s->n[1] + s->n[2] + s->n[3];
    size_t need = x->alen + 10 + (size_t)t;
    if (need > UINT32_MAX) {
        x->over = 1;
        return 0;
    }
    if (!grow(x, (void **)&x->arena, &x->acap, need, 1))
        return 0;
    if (!grow(x, (void **)&x->heap, &x->hcap, x->hlen + 1, sizeof(HeapItem)))
        return 0;
    uint8_t *o = x->arena + x->alen;
    memcpy(o, s->n, 4);
    memcpy(o + 4, s->found, 4);
    o[8] = s->rc;
    o[9] = s->sp;
    o += 10;
    for (int i = 0; i < 4; i++) {
        memcpy(o, s->p[i], s->n[i]);
        o += s->n[i];
    }
    x->seq++;
    /* Lowest score first, the latest among equals (as the Python heap's falling count). */
    HeapItem item = {((uint64_t)(sc + 4096) << 40) | ((((uint64_t)1) << 40) - 1 - x->seq),
                     (uint32_t)x->alen, entry};
    x->alen = need;
    size_t i = x->hlen++;
    while (i > 0) {
        size_t up_ = (i - 1) / 2;
        if (x->heap[up_].prio <= item.prio)
            break;
        x->heap[i] = x->heap[up_];
        i = up_;
    }
    x->heap[i] = item;
    return 1;
}

/* Decode a queued state: its piles, foundations and counts, and the waste they leave. */
static void decode(const Ctx *x, uint32_t off, Full *s) {
    const uint8_t *o = x->arena + off;
    memcpy(s->n, o, 4);
    memcpy(s->found, o + 4, 4);
    s->rc = o[8];
    s->sp = o[9];
    o += 10;
    uint8_t held[NC];
    memset(held, 0, sizeof held);
    for (int i = 0; i < 4; i++) {
        memcpy(s->p[i], o, s->n[i]);
        for (int j = 0; j < s->n[i]; j++)
            held[o[j]] = 1;
        o += s->n[i];
    }
    int nw = 0;
    int end = x->nbase0 + s->sp;
    for (int i = 0; i < end; i++) {
        int c = x->base[i];
        if (!held[c] && x->rel[c] >= s->found[suit(c)])
            s->w[nw++] = (uint8_t)c;
    }
    s->nw = (uint8_t)nw;
    summarize(s);
}

static HeapItem pop(Ctx *x) {
    HeapItem top = x->heap[0];
    HeapItem last = x->heap[--x->hlen];
    size_t i = 0, n = x->hlen;
    for (;;) {
        size_t l = 2 * i + 1;
        if (l >= n)
            break;
        size_t m = (l + 1 < n && x->heap[l + 1].prio < x->heap[l].prio) ? l + 1 : l;
        if (x->heap[m].prio >= last.prio)
            break;
        x->heap[i] = x->heap[m];
        i = m;
    }
    if (n)
        x->heap[i] = last;
    return top;
}

/* -- a child of the state under expansion -------------------------------------------- */

/* Where to build the next child: while a search collects the children, in the kids'
 * array itself (the search makes room for a state's children before it expands the
 * state, make_room), so that a child is not copied there; else (line) in ``scratch``. */
static inline Full *child(Ctx *x, Full *scratch) {
    return x->mode == MODE_COLLECT && x->klen < x->kcap ? &x->kids[x->klen].s : scratch;
}

static void emit(Ctx *x, Full *c, Acts *a) {
    if (x->won || x->over || x->found)
        return;
    settle(x, c, a);
    uint64_t h1, h2;
    digest(c, &h1, &h2);
    if (x->mode == MODE_FIND) {
        if (h1 == x->fh1 && h2 == x->fh2) {
            x->found = 1;
            x->found_state = *c;
            x->found_acts = *a;
        }
        return;
    }
    /* Recorded when the search comes to it (queue_kids, depth_first): one seen by then, or
     * already, is passed over there (as in the Python search). It was built in place (the
     * searches make room for every child first): anything else would be a mistake here,
     * ended as memory run out rather than the array moved under the state expanded. */
    if (!(x->klen < x->kcap && c == &x->kids[x->klen].s)) {
        x->over = 1;
        return;
    }
    /* The table's slot is read when the search comes to this child: fetched now. */
    __builtin_prefetch(&x->slots[h1 & (x->cap - 1)]);
    Kid *k = &x->kids[x->klen++];
    k->h1 = h1;
    k->h2 = h2;
}

static inline void act(Act *a, int card, int count, int target) {
    a->card = (int8_t)card;
    a->count = (int8_t)count;
    a->target = (int8_t)target;
}

static inline void fresh_acts(Acts *a) {
    a->merge.count = 0;
    a->draws = 0;
    a->nsettle = 0;
}

/* The moves of ``c`` to the tableau from ``b`` (the state with ``c`` taken from its source):
 * onto each pile whose top it fits, and into the first empty pile where ``empty_ok``;
 * ``a`` holds the actions before the move (draws). */
static void to_tableau(Ctx *x, int c, const Full *b, int wrap, int empty_ok, const Acts *before) {
    Full scratch, *ch;
    Acts a;
    int empty_done = 0;
    for (int j = 0; j < 4; j++) {
        int target;
        if (b->n[j]) {
            int t = b->p[j][b->n[j] - 1];
            uint8_t card = (uint8_t)c;
            if (!fits(c, t) || dead(x, b->p[j], b->n[j], &card, 1))
                continue;
            target = t;
            ch = child(x, &scratch);
            *ch = *b;
            put(ch, j, c);
        } else if (!empty_ok || empty_done) {
            continue;
        } else {
            empty_done = 1;
            target = TO_EMPTY;
            ch = child(x, &scratch);
            *ch = *b;
            put(ch, j, c);
        }
        if ((wrap || (target >= 0 && x->rel[target] == 0)) && cyclic(x, ch))
            continue;
        a = *before;
        act(&a.play, c, 1, target);
        emit(x, ch, &a);
    }
}

/* RainbowModel._play: the moves of ``c``, the waste's top card after ``draws`` draws, from
 * ``b`` (whose waste is the one below ``c``). */
static void play(Ctx *x, int c, int draws, const Full *b, int wrap) {
    Acts a;
    fresh_acts(&a);
    a.draws = (uint8_t)draws;
    if (takes(x, b, c)) {
        Full scratch, *ch = child(x, &scratch);
        *ch = *b;
        ch->found[suit(c)]++;
        Acts banked_ = a;
        act(&banked_.play, c, 1, TO_FOUNDATION);
        emit(x, ch, &banked_);
    }
    to_tableau(x, c, b, wrap, !b->rc, &a);
}

/* ``b`` with the stock drawn up to its card ``q``: the cards from ``*from`` (where the
 * last call left off, or the state's ``sp`` at first) to ``q`` - 1 go to the waste, and
 * ``q`` is left for a move (the caller's). The draws of one state thus add each card to
 * the waste once, in one copy of the state. */
static inline void draw_to(const Ctx *x, Full *b, int *from, int q) {
    for (int i = *from; i < q; i++)
        b->w[b->nw++] = x->stock[i];
    *from = q;
    b->sp = (uint8_t)(q + 1);
}

/* RainbowModel.expand. */
static void expand(Ctx *x, const Full *s) {
    Full scratch, *ch, b;
    Acts a;
    int wrap = wrapped(x, s);
    int top_r = s->rc ? x->reserve[s->rc - 1] : -1;
    /* 1. to the foundations */
    for (int i = 0; i < 4; i++) {
        if (s->n[i]) {
            int c = s->p[i][s->n[i] - 1];
            if (takes(x, s, c)) {
                ch = child(x, &scratch);
                *ch = *s;
                take(ch, i);
                ch->found[suit(c)]++;
                fresh_acts(&a);
                act(&a.play, c, 1, TO_FOUNDATION);
                emit(x, ch, &a);
            }
        }
    }
    if (s->rc && takes(x, s, top_r)) {
        ch = child(x, &scratch);
        *ch = *s;
        ch->rc--;
        ch->found[suit(top_r)]++;
        fresh_acts(&a);
        act(&a.play, top_r, 1, TO_FOUNDATION);
        emit(x, ch, &a);
    }
    /* 2. the reserve to the tableau (``b``: the state, less the reserve's top card here;
     * to_tableau and play leave it as it is, so that it serves again in 4.) */
    b = *s;
    if (s->rc) {
        b.rc--;
        fresh_acts(&a);
        to_tableau(x, top_r, &b, wrap, 1, &a);
        b.rc++;
    }
    /* the ranks of the piles' top cards: those a card may go on */
    int above = 0;
    for (int i = 0; i < 4; i++)
        if (s->n[i])
            above |= 1 << rank(s->p[i][s->n[i] - 1]);
    /* 3. a whole pile onto another, only when no pile is empty, with a fill of the pile it
     * empties */
    int all = s->n[0] && s->n[1] && s->n[2] && s->n[3];
    if (all && (s->rc || s->nw || s->sp < x->nstock)) {
        for (int i = 0; i < 4; i++) {
            int bottom = s->p[i][0];
            if (!(above >> up(bottom) & 1))
                continue; /* no pile's top takes this one */
            for (int j = 0; j < 4; j++) {
                if (j == i)
                    continue;
                int t = s->p[j][s->n[j] - 1];
                if (!fits(bottom, t) || dead(x, s->p[j], s->n[j], s->p[i], s->n[i]))
                    continue;
                Full m = *s;
                merge_piles(&m, i, j);
                if ((wrap || x->rel[t] == 0) && cyclic(x, &m))
                    continue;
                Act merge;
                act(&merge, bottom, s->n[i], t);
                if (s->rc) {
                    ch = child(x, &scratch);
                    *ch = m;
                    put(ch, i, top_r);
                    ch->rc--;
                    fresh_acts(&a);
                    a.merge = merge;
                    act(&a.play, top_r, 1, TO_EMPTY);
                    emit(x, ch, &a);
                    continue;
                }
                if (s->nw) {
                    int c = s->w[s->nw - 1];
                    ch = child(x, &scratch);
                    *ch = m;
                    ch->nw--;
                    put(ch, i, c);
                    fresh_acts(&a);
                    a.merge = merge;
                    act(&a.play, c, 1, TO_EMPTY);
                    emit(x, ch, &a);
                }
                int from = s->sp;
                for (int q = s->sp; q < x->nstock; q++) {
                    draw_to(x, &m, &from, q);
                    ch = child(x, &scratch);
                    *ch = m;
                    put(ch, i, x->stock[q]);
                    fresh_acts(&a);
                    a.merge = merge;
                    a.draws = (uint8_t)(q + 1 - s->sp);
                    act(&a.play, x->stock[q], 1, TO_EMPTY);
                    emit(x, ch, &a);
                }
            }
        }
    }
    /* 4. the waste's top card, then draws of k cards and a move of the last one drawn
     * (``b`` is the state less the waste's top card, then the state with the draws so far:
     * play leaves it as it is) */
    if (s->nw) {
        b.nw--;
        play(x, s->w[s->nw - 1], 0, &b, wrap);
        b.nw++;
    }
    int anywhere = !s->rc && !all;
    int from = s->sp;
    for (int q = s->sp; q < x->nstock; q++) {
        int c = x->stock[q];
        if (anywhere || takes(x, s, c) || (above >> up(c) & 1)) {
            draw_to(x, &b, &from, q);
            play(x, c, q + 1 - s->sp, &b, wrap);
        }
    }
}

/* -- the search ----------------------------------------------------------------------- */

static double cpu_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

typedef struct {
    int64_t max_nodes; /* < 0: none */
    double deadline;   /* < 0: none */
    int64_t switch_nodes;
    double switch_at;
} Limits;

enum { GOING, WON, LIMIT, EXHAUSTED };

/* Count one expansion: GOING, or LIMIT when a limit is reached first. */
static int count_node(Ctx *x, const Limits *l, int64_t *nodes) {
    if (*nodes == l->max_nodes)
        return LIMIT;
    (*nodes)++;
    if (x->over)
        return LIMIT;
    if (l->deadline >= 0 && *nodes % CLOCK_EVERY == 0 && cpu_now() > l->deadline)
        return LIMIT;
    return GOING;
}

/* Room in the kids' array for the children of a state (children are built in place,
 * child): 0 if memory ran out. */
static int make_room(Ctx *x) {
    return grow(x, (void **)&x->kids, &x->kcap, x->klen + x->max_kids, sizeof(Kid));
}

/* The best-first search's part once a state's children are collected: each in turn is
 * recorded (one seen before is passed over); the best new one (lowest score, the first
 * among equals) is for the dive to go on with, and every other new one is queued. The
 * best one's index in the kids' array, or -1 for none (or a win, or memory run out). */
static int64_t queue_kids(Ctx *x, uint32_t entry, uint32_t *best_entry) {
    int64_t best = -1;
    int best_score = 0;
    for (size_t k = 0; k < x->klen; k++) {
        const Full *c = &x->kids[k].s;
        int64_t e = record(x, x->kids[k].h1, x->kids[k].h2, entry);
        if (e == -2)
            return -1;
        if (e < 0)
            continue;
        if (banked(c) == NC) {
            x->won = 1;
            x->won_entry = (uint32_t)e;
            return -1;
        }
        int sc = score(c);
        if (best < 0 || sc < best_score) {
            if (best >= 0 && !push(x, &x->kids[best].s, best_score, *best_entry))
                return -1;
            best = (int64_t)k;
            best_score = sc;
            *best_entry = (uint32_t)e;
        } else if (!push(x, c, sc, (uint32_t)e)) {
            return -1;
        }
    }
    return best;
}

/* The best-first search with dives, until the queue is empty, a win, a limit, or the time
 * to switch to the depth-first search (GOING). */
static int best_first(Ctx *x, const Limits *l, int64_t *nodes) {
    Full state;
    x->mode = MODE_COLLECT;
    while (x->hlen) {
        if ((l->switch_nodes >= 0 && *nodes >= l->switch_nodes) ||
            (l->switch_at >= 0 && cpu_now() > l->switch_at))
            return GOING;
        HeapItem item = pop(x);
        /* The queue's next state, most often the one popped next: fetched during the dive. */
        if (x->hlen) {
            __builtin_prefetch(x->arena + x->heap[0].off);
            __builtin_prefetch(x->arena + x->heap[0].off + 64);
        }
        decode(x, item.off, &state);
        uint32_t entry = item.entry;
        int d;
        for (d = 0; d < DIVE; d++) {
            if (count_node(x, l, nodes) == LIMIT)
                return LIMIT;
            x->klen = 0;
            if (!make_room(x))
                return LIMIT;
            expand(x, &state);
            uint32_t best_entry = 0;
            int64_t best = x->over ? -1 : queue_kids(x, entry, &best_entry);
            if (x->won)
                return WON;
            if (x->over)
                return LIMIT;
            if (best < 0)
                break;
            state = x->kids[best].s;
            entry = best_entry;
        }
        if (d == DIVE && !push(x, &state, score(&state), entry))
            return LIMIT;
    }
    return EXHAUSTED;
}

typedef struct {
    size_t start, end, next;
    uint32_t entry;
} Frame;

typedef struct {
    Frame *items;
    size_t len, cap;
} Frames;

/* Push a frame of the depth-first search: 0 if memory ran out. */
static int push_frame(Ctx *x, Frames *fs, Frame f) {
    if (fs->len == fs->cap) {
        size_t ncap = fs->cap ? fs->cap * 2 : 256;
        Frame *more = realloc(fs->items, ncap * sizeof(Frame));
        if (more == NULL) {
            x->over = 1;
            return 0;
        }
        fs->items = more;
        fs->cap = ncap;
    }
    fs->items[fs->len++] = f;
    return 1;
}

/* The depth-first search from each queued state in turn, lowest score first, over the same
 * table: every state it records it expands, so when the queue is empty, every state recorded
 * has been expanded. */
static int depth_first(Ctx *x, const Limits *l, int64_t *nodes) {
    Frames fs = {NULL, 0, 0};
    int result = EXHAUSTED;
    Full state;
    x->parents = 0;
    while (x->hlen && result == EXHAUSTED) {
        HeapItem item = pop(x);
        decode(x, item.off, &state);
        if (count_node(x, l, nodes) == LIMIT) {
            result = LIMIT;
            break;
        }
        x->mode = MODE_COLLECT;
        x->klen = 0;
        if (!make_room(x)) {
            result = LIMIT;
            break;
        }
        expand(x, &state);
        fs.len = 0;
        if (!push_frame(x, &fs, (Frame){0, x->klen, 0, item.entry})) {
            result = LIMIT;
            break;
        }
        while (fs.len) {
            if (x->over) {
                result = LIMIT;
                break;
            }
            Frame *f = &fs.items[fs.len - 1];
            if (f->start + f->next == f->end) {
                x->klen = f->start;
                fs.len--;
                continue;
            }
            Kid *k = &x->kids[f->start + f->next++];
            /* The next children are recorded next, unless this one has children: fetched
             * now, the next one's entry where its slot's fingerprint matches (it is most
             * often a state seen before, whose digest is then read), the one after's slot
             * (the one fetched as it was built may have left the caches since). */
            if (f->start + f->next < f->end) {
                size_t mask = x->cap - 1;
                uint32_t s1 = x->slots[k[1].h1 & mask];
                if (s1 && s1 >> x->ibits == fingerprint(k[1].h2, x->ibits))
                    __builtin_prefetch(&x->eh[(s1 & mask) - 1]);
                if (f->start + f->next + 1 < f->end)
                    __builtin_prefetch(&x->slots[k[2].h1 & mask]);
            }
            int64_t e = record(x, k->h1, k->h2, f->entry);
            if (e == -2) {
                result = LIMIT;
                break;
            }
            if (e < 0)
                continue;
            if (banked(&k->s) == NC) {
                /* The line: to the queued state, then each frame's child under way. */
                x->won = 1;
                x->won_entry = fs.items[0].entry;
                x->tail = malloc(fs.len * sizeof(Digest));
                if (x->tail == NULL) {
                    x->over = 1;
                    result = LIMIT;
                    break;
                }
                for (size_t d = 0; d < fs.len; d++) {
                    const Kid *on = &x->kids[fs.items[d].start + fs.items[d].next - 1];
                    x->tail[d] = (Digest){on->h1, on->h2};
                }
                x->ntail = fs.len;
                result = WON;
                break;
            }
            if (count_node(x, l, nodes) == LIMIT) {
                result = LIMIT;
                break;
            }
            size_t at = f->start + f->next - 1, start = x->klen;
            if (!make_room(x)) {
                result = LIMIT;
                break;
            }
            /* The child is expanded where it is: its children go after it, and the room
             * made for them keeps the array where it is meanwhile. */
            expand(x, &x->kids[at].s);
            if (!push_frame(x, &fs, (Frame){start, x->klen, 0, (uint32_t)e})) {
                result = LIMIT;
                break;
            }
        }
    }
    free(fs.items);
    return result;
}

static void release(Ctx *x) {
    table_free(x->slots, x->cap * sizeof(uint32_t));
    free(x->eh);
    free(x->eparent);
    free(x->tail);
    free(x->heap);
    free(x->arena);
    free(x->kids);
}

static int bytes_arg(PyObject *o, uint8_t *out, int most, const char *what) {
    char *data;
    Py_ssize_t n;
    if (PyBytes_AsStringAndSize(o, &data, &n) < 0)
        return -1;
    if (n > most) {
        PyErr_Format(PyExc_ValueError, "%s: at most %d cards", what, most);
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++)
        if ((uint8_t)data[i] >= NC) {
            PyErr_Format(PyExc_ValueError, "%s: a card is from 0 to 51", what);
            return -1;
        }
    memcpy(out, data, (size_t)n);
    return (int)n;
}

static PyObject *action(int card, int count, int target) {
    return Py_BuildValue("(iii)", card, count, target);
}

/* The actions from the root to the won state, found again from the digests of the states
 * on the way: along the chain of parents to the won entry, then the tail. */
static PyObject *line(Ctx *x, const Full *root) {
    size_t depth = 0;
    for (uint32_t e = x->won_entry; e != NO_PARENT; e = x->eparent[e])
        depth++;
    Digest *chain = malloc((depth + x->ntail) * sizeof(Digest));
    if (chain == NULL)
        return PyErr_NoMemory();
    size_t k = depth;
    for (uint32_t e = x->won_entry; e != NO_PARENT; e = x->eparent[e])
        chain[--k] = x->eh[e];
    if (x->ntail)
        memcpy(chain + depth, x->tail, x->ntail * sizeof(Digest));
    depth += x->ntail;
    PyObject *out = PyList_New(0);
    Full cur = *root;
    x->mode = MODE_FIND;
    x->won = 0;
    x->over = 0;
    for (size_t i = 1; out != NULL && i < depth; i++) {
        x->fh1 = chain[i].h1;
        x->fh2 = chain[i].h2;
        x->found = 0;
        expand(x, &cur);
        if (!x->found) {
            PyErr_SetString(PyExc_RuntimeError, "a state of the line was not found again");
            Py_CLEAR(out);
            break;
        }
        Acts *a = &x->found_acts;
        PyObject *items[NC + 64];
        int n = 0;
        if (a->merge.count)
            items[n++] = action(a->merge.card, a->merge.count, a->merge.target);
        for (int d = 0; d < a->draws; d++)
            items[n++] = action(-1, 0, 0);
        items[n++] = action(a->play.card, a->play.count, a->play.target);
        for (int d = 0; d < a->nsettle; d++)
            items[n++] = action(a->settle[d], 1, TO_FOUNDATION);
        for (int d = 0; d < n; d++) {
            if (items[d] == NULL || PyList_Append(out, items[d]) < 0) {
                Py_CLEAR(out);
            }
            Py_XDECREF(items[d]);
        }
        cur = x->found_state;
    }
    free(chain);
    return out;
}

PyDoc_STRVAR(search_doc,
             "search(rel, reserve, stock, piles, found, rc, sp, waste, max_nodes, deadline, "
             "switch_nodes, switch_at, max_bytes)\n--\n\n"
             "RainbowModel's search from its root: (the actions after the root's to a win, "
             "or None; states expanded; exhausted; bytes held at most). A limit below 0 is "
             "none; the deadline and the time to switch are on the process's CPU clock.");

static PyObject *search(PyObject *Py_UNUSED(self), PyObject *args) {
    PyObject *rel_o, *reserve_o, *stock_o, *piles_o, *found_o, *waste_o;
    int rc, sp;
    long long max_nodes, switch_nodes;
    double deadline, switch_at;
    unsigned long long max_bytes;
    if (!PyArg_ParseTuple(args, "SSSO!O!iiSLdLdK", &rel_o, &reserve_o, &stock_o, &PyTuple_Type,
                          &piles_o, &PyTuple_Type, &found_o, &rc, &sp, &waste_o, &max_nodes,
                          &deadline, &switch_nodes, &switch_at, &max_bytes))
        return NULL;
    Ctx *x = calloc(1, sizeof(Ctx));
    if (x == NULL)
        return PyErr_NoMemory();
    Full root;
    memset(&root, 0, sizeof root);
    PyObject *result = NULL;
    uint8_t rel[NC];
    if (bytes_arg(rel_o, rel, NC, "rel") != NC) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "rel: one rank for each of the 52 cards");
        goto done;
    }
    for (int c = 0; c < NC; c++) {
        if (rel[c] > 12) {
            PyErr_SetString(PyExc_ValueError, "rel: ranks from 0 to 12");
            goto done;
        }
        x->rel[c] = rel[c];
        x->at[suit(c) * 13 + rel[c]] = (uint8_t)c;
        if (rel[c] == 0)
            x->leads |= bit(c);
    }
    int nres = bytes_arg(reserve_o, x->reserve, NC, "reserve");
    x->nstock = bytes_arg(stock_o, x->stock, NC, "stock");
    x->nbase0 = bytes_arg(waste_o, x->base, NC, "waste");
    if (nres < 0 || x->nstock < 0 || x->nbase0 < 0)
        goto done;
    /* The root has drawn nothing: the stock given is what is left to draw. */
    if (PyTuple_GET_SIZE(piles_o) != 4 || PyTuple_GET_SIZE(found_o) != 4 || rc < 0 ||
        rc > nres || sp != 0) {
        PyErr_SetString(PyExc_ValueError, "not a state of the model");
        goto done;
    }
    memcpy(x->base + x->nbase0, x->stock, (size_t)x->nstock);
    /* The most children of a state (expand): 5 to the foundations, 4 from the reserve,
     * for each of the 12 merges 1 + the stock's cards, and 5 for the waste's top and for
     * each card drawn. */
    x->max_kids = 5 + 4 + 12 * (1 + (size_t)x->nstock) + 5 * (1 + (size_t)x->nstock);
    for (int i = 0; i < 4; i++) {
        PyObject *p = PyTuple_GET_ITEM(piles_o, i);
        if (!PyBytes_Check(p)) {
            PyErr_SetString(PyExc_TypeError, "piles: four bytes");
            goto done;
        }
        int n = bytes_arg(p, root.p[i], NC, "pile");
        if (n < 0)
            goto done;
        root.n[i] = (uint8_t)n;
        long f = PyLong_AsLong(PyTuple_GET_ITEM(found_o, i));
        if (f == -1 && PyErr_Occurred())
            goto done;
        if (f < 0 || f > 13) {
            PyErr_SetString(PyExc_ValueError, "found: from 0 to 13");
            goto done;
        }
        root.found[i] = (uint8_t)f;
    }
    summarize(&root);
    root.rc = (uint8_t)rc;
    root.sp = (uint8_t)sp;
    /* The root's waste is the waste given; a decoded state's follows from the base. */
    memcpy(root.w, x->base, (size_t)x->nbase0);
    root.nw = (uint8_t)x->nbase0;
    x->max_bytes = (size_t)max_bytes;
    Limits lim = {max_nodes, deadline, switch_nodes, switch_at};
    int64_t nodes = 0;
    int outcome;
    size_t peak;
    Py_BEGIN_ALLOW_THREADS;
    uint64_t h1, h2;
    digest(&root, &h1, &h2);
    x->parents = 1;
    int64_t e = record(x, h1, h2, NO_PARENT);
    if (e < 0 || !push(x, &root, 0, (uint32_t)e)) {
        outcome = LIMIT;
    } else {
        outcome = best_first(x, &lim, &nodes);
        if (outcome == GOING)
            outcome = depth_first(x, &lim, &nodes);
    }
    peak = used(x);
    Py_END_ALLOW_THREADS;
    if (outcome == WON) {
        PyObject *actions = line(x, &root);
        if (actions == NULL)
            goto done;
        result = Py_BuildValue("(NLOK)", actions, (long long)nodes, Py_False,
                               (unsigned long long)peak);
    } else {
        result = Py_BuildValue("(OLOK)", Py_None, (long long)nodes,
                               outcome == EXHAUSTED ? Py_True : Py_False,
                               (unsigned long long)peak);
    }
done:
    release(x);
    free(x);
    return result;
}

static PyMethodDef methods[] = {
    {"search", search, METH_VARARGS, search_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_rainbow", "Rainbow Canfield's search, in C (solver_rainbow).", -1,
    methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__rainbow(void) {
    init_cards();
    init_zob();
    return PyModule_Create(&module);
}
