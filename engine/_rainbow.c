/* Rainbow Canfield's search (solver_rainbow.RainbowModel.search) in C.
 *
 * The same model and the same search as solver_rainbow.py, move for move and in the same
 * order, so that both expand the same states and reach the same verdict on a budget of
 * states (tests/engine/test_solver_rainbow.py compares them): the moves and the safe
 * moves of RainbowModel.expand and _settle, its cuts (_dead, _cyclic), the best-first
 * search with dives, then the depth-first search from the queued states (the module's
 * docstring has the proofs). What differs is the storage: a state is kept as a short
 * string of bytes (the waste is left out and found again from the rest, as the key leaves
 * it out), and the table of states seen holds a 128-bit digest of each state's key and the
 * state it came from, about 30 bytes a state where a Python dict of bytes keys holds about
 * 200. The line to a win is found again by expanding the states along the chain of
 * parents from the root, matching each digest.
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

#define NC 52
#define TO_FOUNDATION (-2)
#define TO_EMPTY (-1)
#define DIVE 40
#define CLOCK_EVERY 256
#define NO_PARENT UINT32_MAX

typedef struct {
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

enum { MODE_BEST, MODE_COLLECT, MODE_FIND };

typedef struct {
    /* the deal */
    uint8_t rel[NC];
    uint8_t at[NC];
    uint8_t reserve[NC];
    uint8_t stock[NC];
    int nstock;
    uint8_t base[2 * NC]; /* the root's waste, then the stock: the waste's cards in order */
    int nbase0;
    /* the table: open addressing; a slot holds a fingerprint of the digest (high half)
     * and the entry's index + 1 (low half), so that a probe reads the entries only when
     * the fingerprints match */
    uint64_t *slots;
    size_t cap;
    Digest *eh;
    uint32_t *eparent;
    size_t ecount, ecap;
    /* the queue of states, and the arena of their bytes */
    HeapItem *heap;
    size_t hlen, hcap;
    uint8_t *arena;
    size_t alen, acap;
    uint64_t seq;
    /* the depth-first search's children */
    Kid *kids;
    size_t klen, kcap;
    /* limits */
    size_t max_bytes;
    int over; /* memory would pass max_bytes */
    /* the expansion under way */
    int mode;
    uint32_t cur_entry;
    int won;
    uint32_t won_entry;
    int has_best;
    Full best;
    uint32_t best_entry;
    int best_score;
    uint64_t fh1, fh2; /* MODE_FIND: the digest looked for */
    int found;
    Full found_state;
    Acts found_acts;
} Ctx;

/* -- cards ---------------------------------------------------------------------------- */

static inline int suit(int c) { return c / 13; }
static inline int rank(int c) { return c % 13 + 1; }
/* The rank of the cards ``c`` goes on (one above, a King on an Ace). */
static inline int up(int c) { return rank(c) % 13 + 1; }
static inline int fits(int c, int t) { return up(c) == rank(t); }

/* -- memory --------------------------------------------------------------------------- */

static size_t used(const Ctx *x) {
    return x->cap * sizeof(uint64_t) + x->ecap * (sizeof(Digest) + sizeof(uint32_t)) +
           x->hcap * sizeof(HeapItem) + x->acap + x->kcap * sizeof(Kid);
}

/* Grow ``*buf`` (of ``*cap`` items of ``size`` bytes) to hold ``need``; 0 if it may not. */
static int grow(Ctx *x, void **buf, size_t *cap, size_t need, size_t size) {
    if (need <= *cap)
        return 1;
    size_t ncap = *cap ? *cap : 1024;
    while (ncap < need)
        ncap *= 2;
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

static inline uint64_t slot_of(uint64_t h2, size_t e) {
    return (h2 & 0xffffffff00000000ULL) | (uint64_t)(e + 1);
}

static int rehash(Ctx *x) {
    size_t ncap = x->cap ? x->cap * 2 : (1u << 16);
    if (used(x) + (ncap - x->cap) * sizeof(uint64_t) > x->max_bytes) {
        x->over = 1;
        return 0;
    }
    uint64_t *ns = calloc(ncap, sizeof(uint64_t));
    if (ns == NULL) {
        x->over = 1;
        return 0;
    }
    for (size_t e = 0; e < x->ecount; e++) {
        size_t i = x->eh[e].h1 & (ncap - 1);
        while (ns[i])
            i = (i + 1) & (ncap - 1);
        ns[i] = slot_of(x->eh[e].h2, e);
    }
    free(x->slots);
    x->slots = ns;
    x->cap = ncap;
    return 1;
}

/* The slot of the digest (h1, h2): the one that holds it, or the empty one where it
 * would go. */
static inline size_t probe(const Ctx *x, uint64_t h1, uint64_t h2) {
    uint64_t mask = x->cap - 1, fp = h2 & 0xffffffff00000000ULL;
    size_t i = h1 & mask;
    uint64_t s;
    while ((s = x->slots[i]) != 0) {
        if ((s & 0xffffffff00000000ULL) == fp) {
            const Digest *d = &x->eh[(s & 0xffffffffULL) - 1];
            if (d->h1 == h1 && d->h2 == h2)
                return i;
        }
        i = (i + 1) & mask;
    }
    return i;
}

/* Record a state: its entry, or -1 if it was seen before, -2 if memory would run out. */
static int64_t record(Ctx *x, uint64_t h1, uint64_t h2, uint32_t parent) {
    if ((x->ecount + 1) * 10 > x->cap * 6 && !rehash(x))
        return -2;
    size_t i = probe(x, h1, h2);
    if (x->slots[i])
        return -1;
    if (x->ecount == x->ecap) {
        size_t old = x->ecap;
        size_t ncap = old ? old * 2 : (1u << 16);
        if (used(x) + (ncap - old) * (sizeof(Digest) + sizeof(uint32_t)) > x->max_bytes) {
            x->over = 1;
            return -2;
        }
        Digest *a = realloc(x->eh, ncap * sizeof(Digest));
        if (a == NULL)
            goto oom;
        x->eh = a;
        uint32_t *c = realloc(x->eparent, ncap * sizeof(uint32_t));
        if (c == NULL)
            goto oom;
        x->eparent = c;
        x->ecap = ncap;
    }
    size_t e = x->ecount++;
    x->eh[e].h1 = h1;
    x->eh[e].h2 = h2;
    x->eparent[e] = parent;
    x->slots[i] = slot_of(h2, e);
    return (int64_t)e;
oom:
    x->over = 1;
    return -2;
}

/* -- a state's key and its digest ----------------------------------------------------- */

static int pile_less(const Full *s, int a, int b) {
    int n = s->n[a] < s->n[b] ? s->n[a] : s->n[b];
    int c = memcmp(s->p[a], s->p[b], (size_t)n);
    if (c)
        return c < 0;
    return s->n[a] < s->n[b];
}

static inline uint64_t mix(uint64_t h) {
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ULL;
    h ^= h >> 33;
    return h;
}

/* The digest of the key: the piles as a multiset (sorted, each with its length), the
 * foundations, the reserve's count and the stock's; the waste follows from them. */
static void digest(const Full *s, uint64_t *h1, uint64_t *h2) {
    int order[4] = {0, 1, 2, 3};
    for (int i = 1; i < 4; i++) {
        int v = order[i], j = i - 1;
        while (j >= 0 && pile_less(s, v, order[j])) {
            order[j + 1] = order[j];
            j--;
        }
        order[j + 1] = v;
    }
    uint8_t buf[NC + 16];
    memset(buf, 0, sizeof buf);
    int k = 0;
    for (int i = 0; i < 4; i++) {
        int pi = order[i];
        buf[k++] = s->n[pi];
        memcpy(buf + k, s->p[pi], s->n[pi]);
        k += s->n[pi];
    }
    memcpy(buf + k, s->found, 4);
    k += 4;
    buf[k++] = s->rc;
    buf[k++] = s->sp;
    uint64_t a = 0x9e3779b97f4a7c15ULL ^ (uint64_t)k, b = 0xd1b54a32d192ed03ULL ^ (uint64_t)k;
    for (int i = 0; i < k; i += 8) {
        uint64_t word;
        memcpy(&word, buf + i, 8);
        a = mix(a ^ word) + 0x632be59bd9b4e019ULL;
        b = mix((b ^ word) * 0x9fb21c651e98df25ULL + 0x85ebca6bULL);
    }
    *h1 = mix(a);
    *h2 = mix(b ^ (a >> 17));
}

/* -- the model (RainbowModel's methods, in the same order) -------------------------- */

static int dead(const Ctx *x, const uint8_t *pile, int n) {
    int low[4] = {13, 13, 13, 13};
    for (int i = 0; i < n; i++) {
        int c = pile[i], s = suit(c), r = x->rel[c];
        if (r > low[s])
            return 1;
        low[s] = r;
    }
    return 0;
}

static int wrapped(const Ctx *x, const Full *s) {
    for (int i = 0; i < 4; i++)
        for (int j = 0; j + 1 < s->n[i]; j++)
            if (x->rel[s->p[i][j]] == 0)
                return 1;
    return 0;
}

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
    for (int t = 0; t < 4; t++) {
        int d = t * 13 + (c % 13 + 12) % 13;
        if (s->found[suit(d)] > x->rel[d])
            continue;
        int lies = 0;
        for (int i = 0; i < 4 && !lies; i++) {
            if (s->n[i] > 1 && s->p[i][0] != d && memchr(s->p[i], d, s->n[i]) != NULL)
                lies = 1;
        }
        if (!lies)
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
                    s->n[i]--;
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
    if (x->mode == MODE_COLLECT) {
        /* Recorded when the search comes to it: one seen by then, or already, is passed
         * over there (as in the Python search). */
        if (!grow(x, (void **)&x->kids, &x->kcap, x->klen + 1, sizeof(Kid)))
            return;
        /* The table's slot is read when the search comes to this child: fetched now. */
        __builtin_prefetch(&x->slots[h1 & (x->cap - 1)]);
        Kid *k = &x->kids[x->klen++];
        k->s = *c;
        k->h1 = h1;
        k->h2 = h2;
        return;
    }
    int64_t e = record(x, h1, h2, x->cur_entry);
    if (e < 0)
        return;
    if (banked(c) == NC) {
        x->won = 1;
        x->won_entry = (uint32_t)e;
        return;
    }
    int sc = score(c);
    if (!x->has_best || sc < x->best_score) {
        if (x->has_best && !push(x, &x->best, x->best_score, x->best_entry))
            return;
        x->has_best = 1;
        x->best = *c;
        x->best_score = sc;
        x->best_entry = (uint32_t)e;
    } else {
        push(x, c, sc, (uint32_t)e);
    }
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

static inline void put(Full *s, int j, int c) { s->p[j][s->n[j]++] = (uint8_t)c; }

/* The moves of ``c`` to the tableau from ``b`` (the state with ``c`` taken from its source):
 * onto each pile whose top it fits, and into the first empty pile where ``empty_ok``;
 * ``a`` holds the actions before the move (draws). */
static void to_tableau(Ctx *x, int c, const Full *b, int wrap, int empty_ok, const Acts *before) {
    Full ch;
    Acts a;
    int empty_done = 0;
    for (int j = 0; j < 4; j++) {
        int target;
        if (b->n[j]) {
            int t = b->p[j][b->n[j] - 1];
            if (!fits(c, t))
                continue;
            target = t;
            ch = *b;
            put(&ch, j, c);
            if (dead(x, ch.p[j], ch.n[j]))
                continue;
        } else if (!empty_ok || empty_done) {
            continue;
        } else {
            empty_done = 1;
            target = TO_EMPTY;
            ch = *b;
            put(&ch, j, c);
        }
        if ((wrap || (target >= 0 && x->rel[target] == 0)) && cyclic(x, &ch))
            continue;
        a = *before;
        act(&a.play, c, 1, target);
        emit(x, &ch, &a);
    }
}

/* RainbowModel._play: the moves of ``c``, the waste's top card after ``draws`` draws, from
 * ``b`` (whose waste is the one below ``c``). */
static void play(Ctx *x, int c, int draws, const Full *b, int wrap) {
    Acts a;
    fresh_acts(&a);
    a.draws = (uint8_t)draws;
    if (takes(x, b, c)) {
        Full ch = *b;
        ch.found[suit(c)]++;
        Acts banked_ = a;
        act(&banked_.play, c, 1, TO_FOUNDATION);
        emit(x, &ch, &banked_);
    }
    to_tableau(x, c, b, wrap, !b->rc, &a);
}

/* ``b`` with ``k`` more cards drawn: the stock's next ``k`` - 1 go to the waste and the
 * last is left for a move (the caller's). */
static inline void drawn(const Ctx *x, Full *b, const Full *s, int q) {
    *b = *s;
    for (int i = s->sp; i < q; i++)
        b->w[b->nw++] = x->stock[i];
    b->sp = (uint8_t)(q + 1);
}

/* RainbowModel.expand. */
static void expand(Ctx *x, const Full *s) {
    Full ch, b;
    Acts a;
    int wrap = wrapped(x, s);
    int top_r = s->rc ? x->reserve[s->rc - 1] : -1;
    /* 1. to the foundations */
    for (int i = 0; i < 4; i++) {
        if (s->n[i]) {
            int c = s->p[i][s->n[i] - 1];
            if (takes(x, s, c)) {
                ch = *s;
                ch.n[i]--;
                ch.found[suit(c)]++;
                fresh_acts(&a);
                act(&a.play, c, 1, TO_FOUNDATION);
                emit(x, &ch, &a);
            }
        }
    }
    if (s->rc && takes(x, s, top_r)) {
        ch = *s;
        ch.rc--;
        ch.found[suit(top_r)]++;
        fresh_acts(&a);
        act(&a.play, top_r, 1, TO_FOUNDATION);
        emit(x, &ch, &a);
    }
    /* 2. the reserve to the tableau */
    if (s->rc) {
        b = *s;
        b.rc--;
        fresh_acts(&a);
        to_tableau(x, top_r, &b, wrap, 1, &a);
    }
    /* 3. a whole pile onto another, only when no pile is empty, with a fill of the pile it
     * empties */
    int all = s->n[0] && s->n[1] && s->n[2] && s->n[3];
    if (all && (s->rc || s->nw || s->sp < x->nstock)) {
        for (int i = 0; i < 4; i++) {
            int bottom = s->p[i][0];
            for (int j = 0; j < 4; j++) {
                if (j == i)
                    continue;
                int t = s->p[j][s->n[j] - 1];
                if (!fits(bottom, t))
                    continue;
                Full m = *s;
                memcpy(m.p[j] + m.n[j], m.p[i], m.n[i]);
                m.n[j] = (uint8_t)(m.n[j] + m.n[i]);
                m.n[i] = 0;
                if (dead(x, m.p[j], m.n[j]))
                    continue;
                if ((wrap || x->rel[t] == 0) && cyclic(x, &m))
                    continue;
                Act merge;
                act(&merge, bottom, s->n[i], t);
                if (s->rc) {
                    ch = m;
                    put(&ch, i, top_r);
                    ch.rc--;
                    fresh_acts(&a);
                    a.merge = merge;
                    act(&a.play, top_r, 1, TO_EMPTY);
                    emit(x, &ch, &a);
                    continue;
                }
                if (s->nw) {
                    int c = s->w[s->nw - 1];
                    ch = m;
                    ch.nw--;
                    put(&ch, i, c);
                    fresh_acts(&a);
                    a.merge = merge;
                    act(&a.play, c, 1, TO_EMPTY);
                    emit(x, &ch, &a);
                }
                for (int q = s->sp; q < x->nstock; q++) {
                    drawn(x, &ch, &m, q);
                    put(&ch, i, x->stock[q]);
                    fresh_acts(&a);
                    a.merge = merge;
                    a.draws = (uint8_t)(q + 1 - s->sp);
                    act(&a.play, x->stock[q], 1, TO_EMPTY);
                    emit(x, &ch, &a);
                }
            }
        }
    }
    /* 4. the waste's top card, then draws of k cards and a move of the last one drawn */
    if (s->nw) {
        b = *s;
        b.nw--;
        play(x, s->w[s->nw - 1], 0, &b, wrap);
    }
    int above = 0;
    for (int i = 0; i < 4; i++)
        if (s->n[i])
            above |= 1 << rank(s->p[i][s->n[i] - 1]);
    int anywhere = !s->rc && !all;
    for (int q = s->sp; q < x->nstock; q++) {
        int c = x->stock[q];
        if (anywhere || takes(x, s, c) || (above >> up(c) & 1)) {
            drawn(x, &b, s, q);
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

/* The best-first search with dives, until the queue is empty, a win, a limit, or the time
 * to switch to the depth-first search (GOING). */
static int best_first(Ctx *x, const Limits *l, int64_t *nodes) {
    Full state;
    x->mode = MODE_BEST;
    while (x->hlen) {
        if ((l->switch_nodes >= 0 && *nodes >= l->switch_nodes) ||
            (l->switch_at >= 0 && cpu_now() > l->switch_at))
            return GOING;
        HeapItem item = pop(x);
        decode(x, item.off, &state);
        x->cur_entry = item.entry;
        int d;
        for (d = 0; d < DIVE; d++) {
            if (count_node(x, l, nodes) == LIMIT)
                return LIMIT;
            x->has_best = 0;
            expand(x, &state);
            if (x->won)
                return WON;
            if (x->over)
                return LIMIT;
            if (!x->has_best)
                break;
            state = x->best;
            x->cur_entry = x->best_entry;
        }
        if (d == DIVE && !push(x, &state, score(&state), x->cur_entry))
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
    while (x->hlen && result == EXHAUSTED) {
        HeapItem item = pop(x);
        decode(x, item.off, &state);
        if (count_node(x, l, nodes) == LIMIT) {
            result = LIMIT;
            break;
        }
        x->mode = MODE_COLLECT;
        x->klen = 0;
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
            int64_t e = record(x, k->h1, k->h2, f->entry);
            if (e == -2) {
                result = LIMIT;
                break;
            }
            if (e < 0)
                continue;
            if (banked(&k->s) == NC) {
                x->won = 1;
                x->won_entry = (uint32_t)e;
                result = WON;
                break;
            }
            if (count_node(x, l, nodes) == LIMIT) {
                result = LIMIT;
                break;
            }
            state = k->s; /* the kids' array may move as it grows */
            size_t start = x->klen;
            expand(x, &state);
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
    free(x->slots);
    free(x->eh);
    free(x->eparent);
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

/* The actions from the root to the won entry, found again along the chain of parents. */
static PyObject *line(Ctx *x, const Full *root) {
    size_t depth = 0;
    for (uint32_t e = x->won_entry; e != NO_PARENT; e = x->eparent[e])
        depth++;
    uint32_t *chain = malloc(depth * sizeof(uint32_t));
    if (chain == NULL)
        return PyErr_NoMemory();
    size_t k = depth;
    for (uint32_t e = x->won_entry; e != NO_PARENT; e = x->eparent[e])
        chain[--k] = e;
    PyObject *out = PyList_New(0);
    Full cur = *root;
    x->mode = MODE_FIND;
    x->won = 0;
    x->over = 0;
    for (size_t i = 1; out != NULL && i < depth; i++) {
        x->fh1 = x->eh[chain[i]].h1;
        x->fh2 = x->eh[chain[i]].h2;
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

PyMODINIT_FUNC PyInit__rainbow(void) { return PyModule_Create(&module); }
