/*
 * csup_async.writers._wkernels: the writer's C loops (see also minmax() at the end).
 *
 * tape(): NDJSON lines parsed into a flat token tape.
 *
 * The writer's row path (pyrows.py) types and shreds Python values column by
 * column; for JSON lines the Python objects themselves cost most of the time
 * (json.loads builds a dict, a str, an int per value).  This module parses a
 * chunk of lines into a tape instead, one entry per JSON value in document
 * order (pre-order), which ndjson.py turns into the same columns pyrows builds
 * from Python values, with numpy:
 *
 *   kind   uint8   0 null, 1 false, 2 true, 3 int, 4 float, 5 string,
 *                  6 object, 7 array
 *   parent int32   the tape index of the object/array holding it, -1 for a row
 *   key    int32   the member's key (an index into the returned key list), -1
 *                  for an array element or a row
 *   val    int64   an int's value, a float's bits, a string's start in the
 *                  string data, an object's or array's number of children
 *   slen   int32   a string's length in bytes (UTF-8, escapes resolved)
 *
 * The string data holds each string as a CSUP column stores it: its tag
 * (uvarint(length + 1)) then its bytes, so a column's strings are one gather.
 *
 * Contract with ndjson.py (which falls back to json.loads + pyrows, the exact
 * reference, whenever this parser is not sure to agree with it):
 *  - status 0: the chunk's lines are parsed, every value representable here;
 *  - status 1: the lines are valid JSON but hold something only the Python path
 *    decides (an int beyond int64, NaN/Infinity, a lone surrogate escape, a
 *    key twice in one object, nesting deeper than the row path shreds); the
 *    chunk's extent (end, rows, lines) is exact, its tape is not returned;
 *  - status 2: a line this parser does not take (invalid JSON, a line break
 *    Python's str.splitlines sees and this does not, deep nesting); end is the
 *    chunk's start: the caller reads from there on with the reference;
 *  - status 3: the buffer ended (not final) before max_rows rows: call again
 *    with more data.
 * Lines split at '\n' (a '\r' is allowed only right before it); a line of
 * spaces and tabs is blank and skipped, as str.strip() would.  The GIL is
 * released for the parse.
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef unsigned char u8;

enum { K_NULL, K_FALSE, K_TRUE, K_INT, K_FLOAT, K_STR, K_OBJ, K_ARR };
enum { ST_OK, ST_PYTHON, ST_STOP, ST_MORE, ST_NOMEM };

#define MAX_STACK 512
#define SHREDDED_DEPTH 40

typedef struct {
    u8 *kind;
    int32_t *parent, *key, *slen;
    int64_t *val;
    Py_ssize_t n, cap;
    u8 *sdata;
    Py_ssize_t sn, scap;
    /* interned keys: bytes, offsets, open-addressing table of ids */
    u8 *kdata;
    Py_ssize_t kn, kcap;
    Py_ssize_t *koff; /* nkeys + 1 */
    int32_t nkeys, koffcap;
    int32_t *table;
    uint64_t *hashes;
    int32_t tcap;
    /* duplicate-key check: keys of the open objects, and stamps */
    int32_t *mkeys;
    Py_ssize_t mn, mcap;
    int64_t *stamp;
    int32_t stampcap;
    int64_t stampno;
    int python; /* a status-1 reason seen */
    int nomem;
} Tape;

static int
grow(void **p, Py_ssize_t *cap, Py_ssize_t need, size_t item)
{
    if (need <= *cap)
        return 1;
    Py_ssize_t c = *cap ? *cap : 1024;
    while (c < need)
        c *= 2;
    void *q = realloc(*p, (size_t)c * item);
    if (!q)
        return 0;
    *p = q;
    *cap = c;
    return 1;
}

static int
tape_reserve(Tape *t, Py_ssize_t need)
{
    if (need <= t->cap)
        return 1;
    Py_ssize_t c = t->cap ? t->cap : 4096;
    while (c < need)
        c *= 2;
    void *a = realloc(t->kind, (size_t)c);
    if (!a)
        return 0;
    t->kind = a;
    a = realloc(t->parent, (size_t)c * 4);
    if (!a)
        return 0;
    t->parent = a;
    a = realloc(t->key, (size_t)c * 4);
    if (!a)
        return 0;
    t->key = a;
    a = realloc(t->slen, (size_t)c * 4);
    if (!a)
        return 0;
    t->slen = a;
    a = realloc(t->val, (size_t)c * 8);
    if (!a)
        return 0;
    t->val = a;
    t->cap = c;
    return 1;
}

static void
tape_free(Tape *t)
{
    free(t->kind);
    free(t->parent);
    free(t->key);
    free(t->slen);
    free(t->val);
    free(t->sdata);
    free(t->kdata);
    free(t->koff);
    free(t->table);
    free(t->hashes);
    free(t->mkeys);
    free(t->stamp);
}

static Py_ssize_t
push(Tape *t, int kind, int32_t parent, int32_t key, int64_t val, int32_t slen)
{
    if (t->n >= t->cap && !tape_reserve(t, t->n + 1)) {
        t->nomem = 1;
        return -1;
    }
    Py_ssize_t i = t->n++;
    t->kind[i] = (u8)kind;
    t->parent[i] = parent;
    t->key[i] = key;
    t->val[i] = val;
    t->slen[i] = slen;
    return i;
}

static uint64_t
hash_bytes(const u8 *p, Py_ssize_t n)
{
    uint64_t h = 1469598103934665603ULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 1099511628211ULL;
    }
    return h;
}

static int
table_rehash(Tape *t, int32_t cap)
{
    int32_t *tab = malloc((size_t)cap * 4);
    if (!tab)
        return 0;
    for (int32_t i = 0; i < cap; i++)
        tab[i] = -1;
    for (int32_t k = 0; k < t->nkeys; k++) {
        uint64_t h = t->hashes[k];
        int32_t j = (int32_t)(h & (uint64_t)(cap - 1));
        while (tab[j] >= 0)
            j = (j + 1) & (cap - 1);
        tab[j] = k;
    }
    free(t->table);
    t->table = tab;
    t->tcap = cap;
    return 1;
}

/* The id of key bytes p[0:n], interned. -1 on no memory. */
static int32_t
intern(Tape *t, const u8 *p, Py_ssize_t n)
{
    uint64_t h = hash_bytes(p, n);
    if (t->tcap == 0 && !table_rehash(t, 64))
        return -1;
    int32_t mask = t->tcap - 1;
    int32_t j = (int32_t)(h & (uint64_t)mask);
    while (t->table[j] >= 0) {
        int32_t k = t->table[j];
        if (t->hashes[k] == h && t->koff[k + 1] - t->koff[k] == n &&
            memcmp(t->kdata + t->koff[k], p, (size_t)n) == 0)
            return k;
        j = (j + 1) & mask;
    }
    if (t->nkeys >= 0x3FFFFFF)
        return -1;
    int32_t k = t->nkeys;
    Py_ssize_t kc = t->koffcap;
    if (!grow((void **)&t->koff, &kc, k + 2, sizeof(Py_ssize_t)))
        return -1;
    Py_ssize_t hc = t->koffcap;
    if (!grow((void **)&t->hashes, &hc, k + 2, sizeof(uint64_t)))
        return -1;
    if (kc != hc)
        return -1;
    t->koffcap = (int32_t)kc;
    if (!grow((void **)&t->kdata, &t->kcap, t->kn + n + 1, 1))
        return -1;
    if (k == 0)
        t->koff[0] = 0;
    memcpy(t->kdata + t->kn, p, (size_t)n);
    t->kn += n;
    t->koff[k + 1] = t->kn;
    t->hashes[k] = h;
    t->nkeys = k + 1;
    t->table[j] = k;
    if ((int64_t)t->nkeys * 2 > t->tcap && !table_rehash(t, t->tcap * 2))
        return -1;
    return k;
}

typedef struct {
    const u8 *s;
    Py_ssize_t end; /* end of the buffer */
    Py_ssize_t p;
} Cur;

/* Skip JSON whitespace within a line: spaces and tabs; a '\r' only right before
 * '\n' or the end of the buffer (there it ends the line; elsewhere Python's
 * splitlines would break the line, so the parser stops). Returns 0 on a bad '\r'. */
static inline int
skip_ws(Cur *c)
{
    while (c->p < c->end) {
        u8 ch = c->s[c->p];
        if (ch == ' ' || ch == '\t')
            c->p++;
        else if (ch == '\r')
            return c->p + 1 == c->end || c->s[c->p + 1] == '\n';
        else
            return 1;
    }
    return 1;
}

static inline int
at_line_end(const Cur *c)
{
    return c->p >= c->end || c->s[c->p] == '\n' || c->s[c->p] == '\r';
}

static inline int
hexval(u8 ch)
{
    if (ch >= '0' && ch <= '9')
        return ch - '0';
    if (ch >= 'a' && ch <= 'f')
        return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F')
        return ch - 'A' + 10;
    return -1;
}

static inline int
read_hex4(Cur *c, uint32_t *out)
{
    if (c->end - c->p < 4)
        return 0;
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) {
        int h = hexval(c->s[c->p + i]);
        if (h < 0)
            return 0;
        v = v << 4 | (uint32_t)h;
    }
    c->p += 4;
    *out = v;
    return 1;
}

static inline u8 *
put_utf8(u8 *o, uint32_t cp)
{
    if (cp < 0x80) {
        *o++ = (u8)cp;
    } else if (cp < 0x800) {
        *o++ = (u8)(0xC0 | cp >> 6);
        *o++ = (u8)(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        *o++ = (u8)(0xE0 | cp >> 12);
        *o++ = (u8)(0x80 | (cp >> 6 & 0x3F));
        *o++ = (u8)(0x80 | (cp & 0x3F));
    } else {
        *o++ = (u8)(0xF0 | cp >> 18);
        *o++ = (u8)(0x80 | (cp >> 12 & 0x3F));
        *o++ = (u8)(0x80 | (cp >> 6 & 0x3F));
        *o++ = (u8)(0x80 | (cp & 0x3F));
    }
    return o;
}

/* Parse the string at c->p (at its opening quote) into t->sdata as CSUP stores it (its
 * tag, uvarint(length + 1), then its UTF-8 bytes); returns where the tag starts and
 * sets *len (the string's bytes) and *tagn (the tag's), or -1 (stop: invalid, or a
 * line break Python sees). */
static Py_ssize_t
parse_string(Tape *t, Cur *c, Py_ssize_t *len, int *tagn)
{
    c->p++; /* the quote */
    /* the unescaped string is never longer than its source */
    Py_ssize_t q = c->p;
    while (q < c->end && c->s[q] != '"' && c->s[q] != '\n') {
        if (c->s[q] == '\\')
            q++;
        q++;
    }
    if (!grow((void **)&t->sdata, &t->scap, t->sn + (q - c->p) + 16, 1)) {
        t->nomem = 1;
        return -1;
    }
    Py_ssize_t start = t->sn;
    u8 *o = t->sdata + t->sn + 1; /* after a one-byte tag, moved if it needs more */
    const u8 *s = c->s;
    Py_ssize_t p = c->p, end = c->end;
    for (;;) {
        /* a run of plain ASCII */
        while (p < end) {
            u8 ch = s[p];
            if (ch == '"' || ch == '\\' || ch < 0x20 || ch >= 0x80)
                break;
            *o++ = ch;
            p++;
        }
        if (p >= end)
            return -1;
        u8 ch = s[p];
        if (ch == '"') {
            p++;
            break;
        }
        if (ch < 0x20)
            return -1; /* a control character: json.loads refuses it */
        if (ch == '\\') {
            if (p + 1 >= end)
                return -1;
            u8 e = s[p + 1];
            p += 2;
            switch (e) {
            case '"': *o++ = '"'; break;
            case '\\': *o++ = '\\'; break;
            case '/': *o++ = '/'; break;
            case 'b': *o++ = '\b'; break;
            case 'f': *o++ = '\f'; break;
            case 'n': *o++ = '\n'; break;
            case 'r': *o++ = '\r'; break;
            case 't': *o++ = '\t'; break;
            case 'u': {
                Cur h = {s, end, p};
                uint32_t cp;
                if (!read_hex4(&h, &cp))
                    return -1;
                p = h.p;
                if (cp >= 0xD800 && cp <= 0xDBFF) {
                    uint32_t lo;
                    Cur h2 = {s, end, p + 2};
                    if (p + 1 < end && s[p] == '\\' && s[p + 1] == 'u' && read_hex4(&h2, &lo) &&
                        lo >= 0xDC00 && lo <= 0xDFFF) {
                        p = h2.p;
                        cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                    } else {
                        t->python = 1; /* a lone surrogate: Python's str, not UTF-8 */
                        cp = 0xFFFD;
                    }
                } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
                    t->python = 1;
                    cp = 0xFFFD;
                }
                o = put_utf8(o, cp);
                break;
            }
            default:
                return -1;
            }
            continue;
        }
        /* a multi-byte UTF-8 sequence, checked as Python's decoder does */
        uint32_t cp;
        int need;
        if (ch >= 0xC2 && ch <= 0xDF) {
            need = 1;
            cp = ch & 0x1F;
        } else if (ch >= 0xE0 && ch <= 0xEF) {
            need = 2;
            cp = ch & 0x0F;
        } else if (ch >= 0xF0 && ch <= 0xF4) {
            need = 3;
            cp = ch & 0x07;
        } else {
            return -1;
        }
        if (end - p < need + 1)
            return -1;
        for (int i = 1; i <= need; i++) {
            u8 b = s[p + i];
            if ((b & 0xC0) != 0x80)
                return -1;
            cp = cp << 6 | (b & 0x3F);
        }
        if ((need == 2 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) ||
            (need == 3 && (cp < 0x10000 || cp > 0x10FFFF)))
            return -1;
        if (cp == 0x85 || cp == 0x2028 || cp == 0x2029)
            return -1; /* str.splitlines breaks the line there */
        memcpy(o, s + p, (size_t)need + 1);
        o += need + 1;
        p += need + 1;
    }
    c->p = p;
    /* the tag CSUP stores before the string: uvarint(length + 1) */
    Py_ssize_t n = (Py_ssize_t)(o - (t->sdata + start + 1));
    uint64_t tag = (uint64_t)n + 1;
    int nb = 1;
    while (tag >> (7 * nb))
        nb++;
    if (nb > 1)
        memmove(t->sdata + start + nb, t->sdata + start + 1, (size_t)n);
    for (int i = 0; i < nb; i++)
        t->sdata[start + i] = (u8)((tag >> (7 * i)) & 0x7F) | (i + 1 < nb ? 0x80 : 0);
    *len = n;
    *tagn = nb;
    t->sn = start + nb + n;
    return start;
}

/* A number at c->p: 1 int (in *iv), 2 float (in *dv), 0 invalid (stop). */
static int
parse_number(Tape *t, Cur *c, int64_t *iv, double *dv)
{
    const u8 *s = c->s;
    Py_ssize_t p = c->p, end = c->end, st = p;
    int neg = 0;
    if (p < end && s[p] == '-') {
        neg = 1;
        p++;
    }
    if (p >= end)
        return 0;
    if (s[p] == 'I') { /* -Infinity: Python's json takes it */
        if (end - p >= 8 && memcmp(s + p, "Infinity", 8) == 0) {
            c->p = p + 8;
            t->python = 1;
            *dv = neg ? -HUGE_VAL : HUGE_VAL;
            return 2;
        }
        return 0;
    }
    if (s[p] < '0' || s[p] > '9')
        return 0;
    uint64_t mag = 0;
    int over = 0;
    if (s[p] == '0') {
        p++;
    } else {
        while (p < end && s[p] >= '0' && s[p] <= '9') {
            unsigned d = s[p] - '0';
            if (mag > (UINT64_MAX - d) / 10)
                over = 1;
            else
                mag = mag * 10 + d;
            p++;
        }
    }
    int isfloat = 0;
    if (p < end && s[p] == '.') {
        Py_ssize_t q = p + 1;
        if (q >= end || s[q] < '0' || s[q] > '9') {
            /* "1." : Python's scanner reads 1, then fails on '.' */
            return 0;
        }
        while (q < end && s[q] >= '0' && s[q] <= '9')
            q++;
        p = q;
        isfloat = 1;
    }
    if (p < end && (s[p] == 'e' || s[p] == 'E')) {
        Py_ssize_t q = p + 1;
        if (q < end && (s[q] == '+' || s[q] == '-'))
            q++;
        if (q < end && s[q] >= '0' && s[q] <= '9') {
            while (q < end && s[q] >= '0' && s[q] <= '9')
                q++;
            p = q;
            isfloat = 1;
        }
        /* else Python's regex stops before the 'e'; the line then fails */
    }
    c->p = p;
    if (isfloat) {
        char small[64];
        Py_ssize_t n = p - st;
        char *buf = n < 63 ? small : malloc((size_t)n + 1);
        if (!buf) {
            t->nomem = 1;
            return 0;
        }
        memcpy(buf, s + st, (size_t)n);
        buf[n] = 0;
        *dv = strtod(buf, NULL);
        if (buf != small)
            free(buf);
        return 2;
    }
    if (over || mag > (uint64_t)INT64_MAX + (uint64_t)neg) {
        t->python = 1; /* beyond int64: the reference writes uint64 or refuses */
        *iv = 0;
        return 1;
    }
    *iv = neg ? (int64_t)(0 - mag) : (int64_t)mag;
    return 1;
}

typedef struct {
    int32_t tok;
    int is_obj;
    int64_t count;
    Py_ssize_t mstart; /* where this object's member keys start in t->mkeys */
} Frame;

/* Close an object: 0 if a key repeats (sets t->python). */
static void
check_keys(Tape *t, Py_ssize_t mstart)
{
    Py_ssize_t m = t->mn - mstart;
    if (m < 2)
        return;
    if (t->stampcap < t->nkeys) {
        int32_t c = t->stampcap ? t->stampcap : 256;
        while (c < t->nkeys)
            c *= 2;
        int64_t *q = realloc(t->stamp, (size_t)c * 8);
        if (!q) {
            t->nomem = 1;
            return;
        }
        for (int32_t i = t->stampcap; i < c; i++)
            q[i] = -1;
        t->stamp = q;
        t->stampcap = c;
    }
    int64_t no = ++t->stampno;
    for (Py_ssize_t i = mstart; i < t->mn; i++) {
        int32_t k = t->mkeys[i];
        if (t->stamp[k] == no) {
            t->python = 1;
            return;
        }
        t->stamp[k] = no;
    }
}

/* One line's value at c->p (after leading whitespace). 1 ok, 0 stop. */
static int
parse_line(Tape *t, Cur *c, Frame *stack)
{
    int depth = 0;
    int32_t parent = -1, key = -1;
    for (;;) {
        /* a value */
        if (c->p >= c->end)
            return 0;
        u8 ch = c->s[c->p];
        Py_ssize_t tok;
        if (ch == '{' || ch == '[') {
            tok = push(t, ch == '{' ? K_OBJ : K_ARR, parent, key, 0, 0);
            if (tok < 0)
                return 0;
            if (depth >= MAX_STACK)
                return 0;
            if (depth >= SHREDDED_DEPTH)
                t->python = 1;
            c->p++;
            if (!skip_ws(c))
                return 0;
            Frame *f = &stack[depth++];
            f->tok = (int32_t)tok;
            f->is_obj = ch == '{';
            f->count = 0;
            f->mstart = t->mn;
            if (c->p < c->end && c->s[c->p] == (ch == '{' ? '}' : ']')) {
                c->p++;
                depth--;
                goto after_value;
            }
            parent = (int32_t)tok;
            if (f->is_obj)
                goto read_key;
            key = -1;
            continue;
        } else if (ch == '"') {
            Py_ssize_t len;
            int tagn;
            Py_ssize_t st = parse_string(t, c, &len, &tagn);
            if (st < 0)
                return 0;
            if (len > INT32_MAX)
                return 0;
            if (push(t, K_STR, parent, key, st, (int32_t)len) < 0)
                return 0;
        } else if (ch == '-' || (ch >= '0' && ch <= '9')) {
            int64_t iv;
            double dv;
            int r = parse_number(t, c, &iv, &dv);
            if (r == 0)
                return 0;
            int64_t bits;
            if (r == 2)
                memcpy(&bits, &dv, 8);
            else
                bits = iv;
            if (push(t, r == 1 ? K_INT : K_FLOAT, parent, key, bits, 0) < 0)
                return 0;
        } else if (ch == 't' && c->end - c->p >= 4 && memcmp(c->s + c->p, "true", 4) == 0) {
            c->p += 4;
            if (push(t, K_TRUE, parent, key, 0, 0) < 0)
                return 0;
        } else if (ch == 'f' && c->end - c->p >= 5 && memcmp(c->s + c->p, "false", 5) == 0) {
            c->p += 5;
            if (push(t, K_FALSE, parent, key, 0, 0) < 0)
                return 0;
        } else if (ch == 'n' && c->end - c->p >= 4 && memcmp(c->s + c->p, "null", 4) == 0) {
            c->p += 4;
            if (push(t, K_NULL, parent, key, 0, 0) < 0)
                return 0;
        } else if ((ch == 'N' && c->end - c->p >= 3 && memcmp(c->s + c->p, "NaN", 3) == 0) ||
                   (ch == 'I' && c->end - c->p >= 8 &&
                    memcmp(c->s + c->p, "Infinity", 8) == 0)) {
            c->p += ch == 'N' ? 3 : 8;
            t->python = 1;
            if (push(t, K_FLOAT, parent, key, 0, 0) < 0)
                return 0;
        } else {
            return 0;
        }
    after_value:
        if (depth == 0)
            return 1;
        {
            Frame *f = &stack[depth - 1];
            f->count++;
            if (!skip_ws(c))
                return 0;
            if (c->p >= c->end)
                return 0;
            u8 d = c->s[c->p];
            if (d == ',') {
                c->p++;
                if (!skip_ws(c))
                    return 0;
                parent = f->tok;
                if (f->is_obj)
                    goto read_key;
                key = -1;
                continue;
            }
            if (d != (f->is_obj ? '}' : ']'))
                return 0;
            c->p++;
            t->val[f->tok] = f->count;
            if (f->is_obj) {
                check_keys(t, f->mstart);
                t->mn = f->mstart;
            }
            depth--;
            goto after_value;
        }
    read_key:
        if (c->p >= c->end || c->s[c->p] != '"')
            return 0;
        {
            Py_ssize_t len;
            Py_ssize_t mark = t->sn;
            int tagn;
            Py_ssize_t st = parse_string(t, c, &len, &tagn);
            if (st < 0)
                return 0;
            int32_t k = intern(t, t->sdata + st + tagn, len);
            t->sn = mark; /* keys live in the key table, not the string data */
            if (k < 0) {
                t->nomem = 1;
                return 0;
            }
            if (!grow((void **)&t->mkeys, &t->mcap, t->mn + 1, 4)) {
                t->nomem = 1;
                return 0;
            }
            t->mkeys[t->mn++] = k;
            key = k;
            if (!skip_ws(c) || c->p >= c->end || c->s[c->p] != ':')
                return 0;
            c->p++;
            if (!skip_ws(c))
                return 0;
        }
    }
}

static PyObject *
bytes_of(const void *p, Py_ssize_t n)
{
    return PyBytes_FromStringAndSize(n ? (const char *)p : "", n);
}

/* tape(buf, start, max_rows, final) -> (status, end, rows, lines, kind, parent, key,
 *                                       val, slen, sdata, keys) */
static PyObject *
k_tape(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "tape(buf, start, max_rows, final)");
        return NULL;
    }
    Py_buffer in;
    if (PyObject_GetBuffer(args[0], &in, PyBUF_SIMPLE) < 0)
        return NULL;
    Py_ssize_t start = PyLong_AsSsize_t(args[1]);
    Py_ssize_t max_rows = PyLong_AsSsize_t(args[2]);
    int final = PyObject_IsTrue(args[3]);
    if (PyErr_Occurred() || start < 0 || start > in.len || max_rows < 0 || final < 0) {
        PyBuffer_Release(&in);
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "tape: bad arguments");
        return NULL;
    }
    Tape t;
    memset(&t, 0, sizeof t);
    Frame *stack = malloc(sizeof(Frame) * MAX_STACK);
    int status = ST_OK;
    Py_ssize_t rows = 0, lines = 0;
    Cur c = {(const u8 *)in.buf, in.len, start};
    if (!stack) {
        status = ST_NOMEM;
    } else {
        Py_BEGIN_ALLOW_THREADS
        while (rows < max_rows) {
            if (c.p >= c.end) {
                if (!final)
                    status = ST_MORE;
                break;
            }
            Py_ssize_t line_start = c.p;
            /* blank? */
            if (!skip_ws(&c)) {
                status = ST_STOP;
                break;
            }
            if (!at_line_end(&c)) {
                /* a line must end in the buffer unless it is the last */
                if (!final && memchr(c.s + c.p, '\n', (size_t)(c.end - c.p)) == NULL) {
                    c.p = line_start;
                    status = ST_MORE;
                    break;
                }
                if (!parse_line(&t, &c, stack) || !skip_ws(&c) || !at_line_end(&c)) {
                    status = t.nomem ? ST_NOMEM : ST_STOP;
                    break;
                }
                if (t.nomem) {
                    status = ST_NOMEM;
                    break;
                }
                rows++;
            }
            if (c.p < c.end && c.s[c.p] == '\r')
                c.p++;
            if (c.p < c.end) {
                if (c.s[c.p] != '\n') {
                    status = ST_STOP;
                    break;
                }
                c.p++;
                lines++;
            } else if (!final) {
                /* the last line of a non-final buffer may go on in the next */
                c.p = line_start;
                status = ST_MORE;
                break;
            }
        }
        Py_END_ALLOW_THREADS
    }
    free(stack);
    PyBuffer_Release(&in);
    if (status == ST_NOMEM || t.nomem) {
        tape_free(&t);
        return PyErr_NoMemory();
    }
    if (status == ST_OK && t.python)
        status = ST_PYTHON;
    PyObject *keys = PyList_New(status == ST_OK ? t.nkeys : 0);
    if (!keys) {
        tape_free(&t);
        return NULL;
    }
    if (status == ST_OK) {
        for (int32_t k = 0; k < t.nkeys; k++) {
            PyObject *s = PyUnicode_DecodeUTF8((const char *)t.kdata + t.koff[k],
                                               t.koff[k + 1] - t.koff[k], "strict");
            if (!s) {
                Py_DECREF(keys);
                tape_free(&t);
                return NULL;
            }
            PyList_SET_ITEM(keys, k, s);
        }
    }
    Py_ssize_t n = status == ST_OK ? t.n : 0;
    PyObject *res = Py_BuildValue(
        "(innnNNNNNNN)", status, status == ST_STOP ? start : c.p, rows, lines,
        bytes_of(t.kind, n), bytes_of(t.parent, n * 4), bytes_of(t.key, n * 4),
        bytes_of(t.val, n * 8), bytes_of(t.slen, n * 4),
        bytes_of(t.sdata, status == ST_OK ? t.sn : 0), keys);
    tape_free(&t);
    return res;
}

/* minmax(data, offsets, valid) -> (index of the smallest, of the largest) byte string
 * among the valid ones (valid: a bool per value, or None), or None when there is
 * none or a bound is bad.  Byte-wise order, a prefix first (memcmp, then length):
 * the segment statistics of a string column, without importing pyarrow. */
static PyObject *
k_minmax(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "minmax(data, offsets, valid)");
        return NULL;
    }
    Py_buffer d, o, v;
    int have_valid = args[2] != Py_None;
    if (PyObject_GetBuffer(args[0], &d, PyBUF_SIMPLE) < 0)
        return NULL;
    if (PyObject_GetBuffer(args[1], &o, PyBUF_SIMPLE) < 0) {
        PyBuffer_Release(&d);
        return NULL;
    }
    if (have_valid && PyObject_GetBuffer(args[2], &v, PyBUF_SIMPLE) < 0) {
        PyBuffer_Release(&o);
        PyBuffer_Release(&d);
        return NULL;
    }
    const u8 *data = d.buf;
    const int64_t *off = o.buf;
    Py_ssize_t n = o.len / 8 - 1;
    const u8 *valid = have_valid ? v.buf : NULL;
    Py_ssize_t lo = -1, hi = -1;
    int ok = o.len % 8 == 0 && n >= 0 && (!have_valid || v.len >= n);
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; ok && i < n; i++) {
        int64_t a = off[i], b = off[i + 1];
        if (a < 0 || b < a || b > d.len) {
            ok = 0;
            break;
        }
        if (valid && !valid[i])
            continue;
        if (lo < 0) {
            lo = hi = i;
            continue;
        }
        int64_t la = off[lo], ll = off[lo + 1] - la;
        int64_t len = b - a;
        int c = memcmp(data + a, data + la, (size_t)(len < ll ? len : ll));
        if (c < 0 || (c == 0 && len < ll))
            lo = i;
        int64_t ha = off[hi], hl = off[hi + 1] - ha;
        c = memcmp(data + a, data + ha, (size_t)(len < hl ? len : hl));
        if (c > 0 || (c == 0 && len > hl))
            hi = i;
    }
    Py_END_ALLOW_THREADS
    if (have_valid)
        PyBuffer_Release(&v);
    PyBuffer_Release(&o);
    PyBuffer_Release(&d);
    if (!ok || lo < 0)
        Py_RETURN_NONE;
    return Py_BuildValue("(nn)", lo, hi);
}

/* intcomp(values, width) -> bytes: uint64 values (signed ones as their two's-complement
 * bits) in the integer compression SuperDB's CSUP stores every integer vector with,
 * as delta variable-byte blocks of at most 127 (width 32) or 255 (width 64) values:
 * per block a header (32: the count, then the block's length in words; 64: the count
 * in the low half, the length in the high half), then the deltas (wrapping at the
 * width), 7 bits a byte, least significant first, the high bit on all but the last,
 * packed into words most significant byte first and padded with 0x80; the stream ends
 * with one word holding the last block's length.  Little-endian words.  The same
 * bytes as csup_async.format.superdb.intcomp.encode (its numpy reference). */
static PyObject *
k_intcomp(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "intcomp(values, width)");
        return NULL;
    }
    long width = PyLong_AsLong(args[1]);
    if (width == -1 && PyErr_Occurred())
        return NULL;
    if (width != 32 && width != 64) {
        PyErr_SetString(PyExc_ValueError, "intcomp width must be 32 or 64");
        return NULL;
    }
    Py_buffer v;
    if (PyObject_GetBuffer(args[0], &v, PyBUF_SIMPLE) < 0)
        return NULL;
    if (v.len % 8) {
        PyBuffer_Release(&v);
        PyErr_SetString(PyExc_ValueError, "intcomp takes uint64 values");
        return NULL;
    }
    Py_ssize_t n = v.len / 8;
    if (n == 0) {
        PyBuffer_Release(&v);
        return PyBytes_FromStringAndSize(NULL, 0);
    }
    const uint64_t *vals = v.buf;
    const Py_ssize_t wb = width / 8, block = width == 32 ? 127 : 255, head = width == 32 ? 2 : 1;
    const uint64_t mask = width == 32 ? 0xFFFFFFFFull : ~0ull;
    Py_ssize_t nblocks = (n + block - 1) / block;
    /* each value takes at most 10 bytes; each block its header and a padded word */
    Py_ssize_t cap = (nblocks * (head + 1) + 1) * wb + n * 10 + wb;
    u8 *out = PyMem_Malloc((size_t)cap);
    u8 *tmp = PyMem_Malloc((size_t)(block * 10 + wb));
    if (out == NULL || tmp == NULL) {
        PyMem_Free(out);
        PyMem_Free(tmp);
        PyBuffer_Release(&v);
        return PyErr_NoMemory();
    }
    Py_ssize_t at = 0;
    uint64_t last_len = 0;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t s = 0; s < n; s += block) {
        Py_ssize_t cnt = n - s < block ? n - s : block, pos = 0;
        uint64_t prev = 0;
        for (Py_ssize_t i = s; i < s + cnt; i++) {
            uint64_t d = (vals[i] - prev) & mask;
            prev = vals[i];
            do {
                u8 b = (u8)(d & 0x7F);
                d >>= 7;
                if (d)
                    b |= 0x80;
                tmp[pos++] = b;
            } while (d);
        }
        Py_ssize_t words = (pos + wb - 1) / wb;
        for (Py_ssize_t k = pos; k < words * wb; k++)
            tmp[k] = 0x80;
        uint64_t length = (uint64_t)(head + words);
        uint64_t hdr[2];
        if (width == 32) {
            hdr[0] = (uint64_t)cnt;
            hdr[1] = length;
        } else {
            hdr[0] = (uint64_t)cnt | (length << 32);
        }
        for (Py_ssize_t h = 0; h < head; h++)
            for (Py_ssize_t k = 0; k < wb; k++)
                out[at++] = (u8)(hdr[h] >> (8 * k));
        for (Py_ssize_t w = 0; w < words; w++)  /* big-endian words written little-endian */
            for (Py_ssize_t k = 0; k < wb; k++)
                out[at++] = tmp[w * wb + wb - 1 - k];
        last_len = length;
    }
    for (Py_ssize_t k = 0; k < wb; k++)
        out[at++] = (u8)(last_len >> (8 * k));
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&v);
    PyMem_Free(tmp);
    PyObject *res = PyBytes_FromStringAndSize((const char *)out, at);
    PyMem_Free(out);
    return res;
}

static PyMethodDef methods[] = {
    {"intcomp", (PyCFunction)(void (*)(void))k_intcomp, METH_FASTCALL,
     "intcomp(values, width) -> SuperDB's variable-byte intcomp blocks"},
    {"minmax", (PyCFunction)(void (*)(void))k_minmax, METH_FASTCALL,
     "minmax(data, offsets, valid) -> (index of min, index of max) or None"},
    {"tape", (PyCFunction)(void (*)(void))k_tape, METH_FASTCALL,
     "tape(buf, start, max_rows, final) -> (status, end, rows, lines, kind, parent, key, "
     "val, slen, sdata, keys)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_wkernels",
    "The writer's C loops: NDJSON lines as a token tape, byte-string bounds (see csup_async/writers/ndjson.py).", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit__wkernels(void)
{
    const uint16_t probe = 1;
    if (*(const u8 *)&probe != 1) {
        PyErr_SetString(PyExc_ImportError, "csup_async.writers._wkernels needs a little-endian machine");
        return NULL;
    }
    return PyModule_Create(&module);
}
