/*
 * csup_async.decode._kernels: the serial loops of the column decoders, in C.
 *
 * A primitive column stream is a run of tag-encoded values (uvarint tag: 0 for
 * null, else body length + 1, then the body).  Each value's position depends on
 * every tag before it, so the walk is serial; numpy can only speculate around
 * that (see lanes.py), a compiled loop just walks.  These kernels do nothing
 * but that walk, into buffers the caller allocated (numpy arrays, through the
 * buffer protocol), so the module needs no numpy headers and imports in
 * microseconds.
 *
 * Contract with the Python side (kernels.py):
 *  - every read is bounds-checked against the input buffer's length (the
 *    bytes come from files we do not trust), every write against the output
 *    buffer's length;
 *  - the GIL is released for every loop;
 *  - a kernel answers None (or False) for any input it does not accept, and
 *    never raises for bad data: the numpy reference (columns.py) then decodes
 *    the stream again and raises the exact FormatError, so error messages have
 *    a single source.  Kernels may be stricter than the reference (e.g. they
 *    refuse 10-byte tags), never more lenient.
 *
 * Signed ints are sign-and-magnitude as Zed writes them: u = |v| << 1 | sign,
 * little-endian with high zero bytes dropped; u = 1 ("minus zero") is int64's
 * minimum.  A narrow type accepts v in [-2**(b-1), 2**(b-1)), so its minimum
 * takes width + 1 bytes.
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

typedef unsigned char u8;

#if defined(__GNUC__) || defined(__clang__)
#define ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define ALWAYS_INLINE inline
#endif

/* The uvarint at *pp (first byte already known to be >= 0x80).  Up to 9 bytes
 * (63 bits) are accepted; a longer or cut-off tag returns 0 (the reference
 * handles those). */
static inline int
read_long_tag(const u8 *b, Py_ssize_t n, Py_ssize_t *pp, uint64_t *tag)
{
    Py_ssize_t p = *pp;
    uint64_t t = 0;
    for (int shift = 0; shift < 63; shift += 7) {
        if (p >= n)
            return 0;
        u8 c = b[p++];
        t |= (uint64_t)(c & 0x7F) << shift;
        if (c < 0x80) {
            *pp = p;
            *tag = t;
            return 1;
        }
    }
    return 0;
}

/* The next tag: 1 on success (position moved past it), 0 if it is not a tag we
 * accept.  The caller guarantees p < n. */
static inline int
read_tag(const u8 *b, Py_ssize_t n, Py_ssize_t *pp, uint64_t *tag)
{
    u8 t = b[*pp];
    if (t < 0x80) {
        *pp += 1;
        *tag = t;
        return 1;
    }
    return read_long_tag(b, n, pp, tag);
}

static inline uint64_t
load64(const u8 *p)
{
    uint64_t w;
    memcpy(&w, p, 8);
    return w; /* little-endian hosts only: checked at import */
}

/* The `len` (<= 8) bytes at p as a little-endian word, reading only those bytes. */
static inline uint64_t
load_short(const u8 *p, uint64_t len)
{
    uint64_t w = 0;
    for (uint64_t k = 0; k < len; k++)
        w |= (uint64_t)p[k] << (8 * k);
    return w;
}

static const uint64_t MASKS[9] = {
    0, 0xFFull, 0xFFFFull, 0xFFFFFFull, 0xFFFFFFFFull, 0xFFFFFFFFFFull,
    0xFFFFFFFFFFFFull, 0xFFFFFFFFFFFFFFull, 0xFFFFFFFFFFFFFFFFull,
};

/* ------------------------------------------------------------ buffers --- */

typedef struct {
    Py_buffer in;
    Py_buffer out[3];
    int nin, nout;
} Views;

static void
release(Views *v)
{
    if (v->nin)
        PyBuffer_Release(&v->in);
    for (int k = 0; k < v->nout; k++)
        PyBuffer_Release(&v->out[k]);
    v->nin = v->nout = 0;
}

/* Acquire the input (read-only, contiguous) and `nout` writable outputs.  On a
 * buffer error (not a buffer, not contiguous, read-only output) the Python
 * error is cleared and 0 returned: the caller answers None. */
static int
acquire(Views *v, PyObject *const *args, int nout)
{
    v->nin = v->nout = 0;
    if (PyObject_GetBuffer(args[0], &v->in, PyBUF_SIMPLE) < 0)
        goto fail;
    v->nin = 1;
    for (int k = 0; k < nout; k++) {
        if (PyObject_GetBuffer(args[1 + k], &v->out[k], PyBUF_WRITABLE) < 0)
            goto fail;
        v->nout = k + 1;
    }
    return 1;
fail:
    PyErr_Clear();
    release(v);
    return 0;
}

static int
check_args(Py_ssize_t nargs, Py_ssize_t want, const char *name)
{
    if (nargs != want) {
        PyErr_Format(PyExc_TypeError, "%s takes %zd arguments", name, want);
        return 0;
    }
    return 1;
}

/* Result of a value kernel: (values, nulls) or None. */
static PyObject *
counts(Py_ssize_t n, Py_ssize_t nulls)
{
    if (n < 0)
        Py_RETURN_NONE;
    return Py_BuildValue("(nn)", n, nulls);
}

/* Mark value i null in a lazily written validity mask: bytes are written only
 * from the first null on (the mask stays unused when no value is null). */
#define MARK_NULL(valid, i, nulls)              \
    do {                                        \
        if ((nulls) == 0)                       \
            memset((valid), 1, (size_t)(i));    \
        (valid)[i] = 0;                         \
        (nulls)++;                              \
    } while (0)

#define MARK_VALID(valid, i, nulls) \
    do {                            \
        if (nulls)                  \
            (valid)[i] = 1;         \
    } while (0)

/* marks(stream, out i64[cap], every) -> n or None: counts the values (None unless
 * the stream ends exactly after one) and records in out[j] the byte where value
 * j * every starts, so a later walk to any value starts at most every - 1
 * values before it.  None also if out is too short for the marks. */
static PyObject *
k_marks(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Views v;
    if (!check_args(nargs, 3, "marks"))
        return NULL;
    Py_ssize_t every = PyLong_AsSsize_t(args[2]);
    if (PyErr_Occurred())
        return NULL;
    if (every < 1)
        Py_RETURN_NONE;
    if (!acquire(&v, args, 1))
        Py_RETURN_NONE;
    const u8 *b = (const u8 *)v.in.buf;
    Py_ssize_t n = v.in.len, cap = v.out[0].len / 8, i = 0, p = 0, next_mark = 0, j = 0;
    int64_t *out = (int64_t *)v.out[0].buf;
    Py_BEGIN_ALLOW_THREADS
    uint64_t t;
    while (p < n) {
        if (i == next_mark) {
            if (j >= cap) {
                i = -1;
                break;
            }
            out[j++] = p;
            next_mark += every;
        }
        if (!read_tag(b, n, &p, &t)) {
            i = -1;
            break;
        }
        if (t > 1) {
            if (t - 1 > (uint64_t)(n - p)) {
                i = -1;
                break;
            }
            p += (Py_ssize_t)(t - 1);
        }
        i++;
    }
    Py_END_ALLOW_THREADS
    release(&v);
    if (i < 0)
        Py_RETURN_NONE;
    return PyLong_FromSsize_t(i);
}

/* --------------------------------------------------------------- skip --- */

/* skip(stream, start, k) -> (end, got) or None: walks up to k values from byte
 * `start` (a value boundary) and answers the byte after the last and how many
 * there were (fewer than k only where the stream ends).  None if start is out
 * of range or a tag or value is cut off: the reference describes it.  This is
 * how a batch finds its slice of a segment without decoding the rest. */
static PyObject *
k_skip(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Py_buffer in;
    if (!check_args(nargs, 3, "skip"))
        return NULL;
    Py_ssize_t start = PyLong_AsSsize_t(args[1]);
    Py_ssize_t k = PyLong_AsSsize_t(args[2]);
    if (PyErr_Occurred())
        return NULL;
    if (PyObject_GetBuffer(args[0], &in, PyBUF_SIMPLE) < 0) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    const u8 *b = (const u8 *)in.buf;
    Py_ssize_t n = in.len, p = start, i = 0;
    int ok = start >= 0 && start <= n && k >= 0;
    Py_BEGIN_ALLOW_THREADS
    uint64_t t;
    while (ok && i < k && p < n) {
        if (!read_tag(b, n, &p, &t)) {
            ok = 0;
            break;
        }
        if (t > 1) {
            if (t - 1 > (uint64_t)(n - p)) {
                ok = 0;
                break;
            }
            p += (Py_ssize_t)(t - 1);
        }
        i++;
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&in);
    if (!ok)
        Py_RETURN_NONE;
    return Py_BuildValue("(nn)", p, i);
}

/* -------------------------------------------------------------- count --- */

/* Values in the stream, or -1 if it does not end exactly after a value. */
static Py_ssize_t
count_values(const u8 *b, Py_ssize_t n)
{
    Py_ssize_t p = 0, i = 0;
    uint64_t t;
    while (p < n) {
        if (!read_tag(b, n, &p, &t))
            return -1;
        if (t > 1) {
            if (t - 1 > (uint64_t)(n - p))
                return -1;
            p += (Py_ssize_t)(t - 1);
        }
        i++;
    }
    return i;
}

static PyObject *
k_count(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Py_buffer in;
    Py_ssize_t got;
    if (!check_args(nargs, 1, "count"))
        return NULL;
    if (PyObject_GetBuffer(args[0], &in, PyBUF_SIMPLE) < 0) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    Py_BEGIN_ALLOW_THREADS
    got = count_values((const u8 *)in.buf, in.len);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&in);
    if (got < 0)
        Py_RETURN_NONE;
    return PyLong_FromSsize_t(got);
}

/* --------------------------------------------------------------- scan --- */

/* scan(stream, starts int64[cap], lengths int64[cap]) -> n or None: each value's
 * body offset and length (-1 for null). */
static PyObject *
k_scan(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Views v;
    Py_ssize_t i = 0;
    if (!check_args(nargs, 3, "scan"))
        return NULL;
    if (!acquire(&v, args, 2))
        Py_RETURN_NONE;
    const u8 *b = (const u8 *)v.in.buf;
    Py_ssize_t n = v.in.len;
    int64_t *starts = (int64_t *)v.out[0].buf, *lengths = (int64_t *)v.out[1].buf;
    Py_ssize_t cap = v.out[0].len / 8;
    if (v.out[1].len / 8 < cap)
        cap = v.out[1].len / 8;
    Py_BEGIN_ALLOW_THREADS
    Py_ssize_t p = 0;
    uint64_t t;
    while (p < n) {
        if (i >= cap || !read_tag(b, n, &p, &t)) {
            i = -1;
            break;
        }
        starts[i] = p;
        if (t == 0) {
            lengths[i] = -1;
        } else {
            if (t - 1 > (uint64_t)(n - p)) {
                i = -1;
                break;
            }
            lengths[i] = (int64_t)(t - 1);
            p += (Py_ssize_t)(t - 1);
        }
        i++;
    }
    Py_END_ALLOW_THREADS
    release(&v);
    if (i < 0)
        Py_RETURN_NONE;
    return PyLong_FromSsize_t(i);
}

/* --------------------------------------------------------------- ints --- */

/* ints(stream, out u64[cap], valid u8[cap], width, signed) -> (n, nulls) or None.
 * Unsigned: the word.  Signed: two's complement of the sign-and-magnitude value,
 * range-checked for narrow widths.  Nulls hold 0. */
static PyObject *
k_ints(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Views v;
    if (!check_args(nargs, 5, "ints"))
        return NULL;
    long width = PyLong_AsLong(args[3]);
    int is_signed = PyObject_IsTrue(args[4]);
    if (PyErr_Occurred())
        return NULL;
    if (width != 1 && width != 2 && width != 4 && width != 8)
        Py_RETURN_NONE;
    if (!acquire(&v, args, 2))
        Py_RETURN_NONE;
    const u8 *b = (const u8 *)v.in.buf;
    Py_ssize_t n = v.in.len;
    uint64_t *out = (uint64_t *)v.out[0].buf;
    u8 *valid = (u8 *)v.out[1].buf;
    Py_ssize_t cap = v.out[0].len / 8;
    if (v.out[1].len < cap)
        cap = v.out[1].len;
    /* body bytes a value may take; for narrow signed types, the bound on u >> 1
     * minus the sign bit (see below) */
    uint64_t most = is_signed ? (width < 8 ? (uint64_t)width + 1 : 8) : (uint64_t)width;
    int narrow = is_signed && width < 8;
    uint64_t lim = narrow ? (uint64_t)1 << (8 * width - 1) : 0;
    Py_ssize_t i = 0, nulls = 0;

    Py_BEGIN_ALLOW_THREADS
    Py_ssize_t p = 0;
    uint64_t t;
    while (p < n) {
        if (i >= cap)
            goto bad;
        t = b[p];
        if (t < 0x80) {
            p++;
        } else if (!read_long_tag(b, n, &p, &t)) {
            goto bad;
        }
        if (t == 0) {
            MARK_NULL(valid, i, nulls);
            out[i++] = 0;
            continue;
        }
        uint64_t len = t - 1;
        if (len > most || len > (uint64_t)(n - p))
            goto bad;
        uint64_t u = (n - p >= 8) ? load64(b + p) & MASKS[len] : load_short(b + p, len);
        p += (Py_ssize_t)len;
        if (is_signed) {
            uint64_t s = u & 1, m = u >> 1;
            if (narrow) {
                /* valid iff m < lim (positive) or 1 <= m <= lim (negative);
                 * m - s wraps for minus zero, which is out of any narrow range */
                if (m - s >= lim)
                    goto bad;
            }
            u = (m ^ (0 - s)) + s;
            if (u == 0 && s) /* minus zero: int64's minimum */
                u = (uint64_t)1 << 63;
        }
        MARK_VALID(valid, i, nulls);
        out[i++] = u;
    }
    goto done;
bad:
    i = -1;
done:
    Py_END_ALLOW_THREADS
    release(&v);
    return counts(i, nulls);
}

/* ----------------------------------------------------------- int32s --- */

/* int32s(stream, out i32[cap]) -> n or None: signed int32 values, no nulls. */
static PyObject *
k_int32s(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Views v;
    if (!check_args(nargs, 2, "int32s"))
        return NULL;
    if (!acquire(&v, args, 1))
        Py_RETURN_NONE;
    const u8 *b = (const u8 *)v.in.buf;
    Py_ssize_t n = v.in.len;
    int32_t *out = (int32_t *)v.out[0].buf;
    Py_ssize_t cap = v.out[0].len / 4, i = 0;
    const uint64_t lim = (uint64_t)1 << 31;

    Py_BEGIN_ALLOW_THREADS
    Py_ssize_t p = 0;
    uint64_t t;
    while (p < n) {
        if (i >= cap)
            goto bad;
        t = b[p];
        if (t < 0x80) {
            p++;
        } else if (!read_long_tag(b, n, &p, &t)) {
            goto bad;
        }
        uint64_t len = t - 1; /* a null (t = 0) wraps to a huge length: refused */
        if (len > 5 || len > (uint64_t)(n - p))
            goto bad;
        uint64_t u = (n - p >= 8) ? load64(b + p) & MASKS[len] : load_short(b + p, len);
        p += (Py_ssize_t)len;
        uint64_t s = u & 1, m = u >> 1;
        if (m - s >= lim)
            goto bad;
        out[i++] = (int32_t)(uint32_t)((m ^ (0 - s)) + s);
    }
    goto done;
bad:
    i = -1;
done:
    Py_END_ALLOW_THREADS
    release(&v);
    if (i < 0)
        Py_RETURN_NONE;
    return PyLong_FromSsize_t(i);
}

/* ------------------------------------------------------------- floats --- */

/* The float loop for one width (a constant after inlining, so each copy is one
 * load and one store).  Returns the number of values or -1. */
static ALWAYS_INLINE Py_ssize_t
floats_loop(const u8 *b, Py_ssize_t n, u8 *out, u8 *valid, Py_ssize_t cap,
            const Py_ssize_t width, Py_ssize_t *nulls_out)
{
    const u8 code = (u8)(width + 1);
    Py_ssize_t i = 0, nulls = 0, p = 0;
    uint64_t t;
    while (p < n) {
        if (i >= cap)
            return -1;
        u8 c = b[p];
        if (c == code && n - p > width) { /* the common case: a value, in bounds */
            memcpy(out + width * i, b + p + 1, (size_t)width);
            p += width + 1;
            MARK_VALID(valid, i, nulls);
            i++;
            continue;
        }
        if (c == 0) {
            MARK_NULL(valid, i, nulls);
            memset(out + width * i, 0, (size_t)width);
            p++;
            i++;
            continue;
        }
        /* a multi-byte tag (an overlong encoding of `code` is still a value) */
        if (c < 0x80 || !read_long_tag(b, n, &p, &t))
            return -1;
        if (t == 0) {
            MARK_NULL(valid, i, nulls);
            memset(out + width * i, 0, (size_t)width);
            i++;
            continue;
        }
        if (t != code || width > n - p)
            return -1;
        memcpy(out + width * i, b + p, (size_t)width);
        p += width;
        MARK_VALID(valid, i, nulls);
        i++;
    }
    *nulls_out = nulls;
    return i;
}

/* floats(stream, out[cap * width], valid u8[cap], width) -> (n, nulls) or None.
 * Every value is exactly `width` bytes (copied as they are: NaN payloads kept),
 * nulls are zero. */
static PyObject *
k_floats(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Views v;
    if (!check_args(nargs, 4, "floats"))
        return NULL;
    long width = PyLong_AsLong(args[3]);
    if (PyErr_Occurred())
        return NULL;
    if (width != 2 && width != 4 && width != 8)
        Py_RETURN_NONE;
    if (!acquire(&v, args, 2))
        Py_RETURN_NONE;
    const u8 *b = (const u8 *)v.in.buf;
    Py_ssize_t n = v.in.len;
    u8 *out = (u8 *)v.out[0].buf;
    u8 *valid = (u8 *)v.out[1].buf;
    Py_ssize_t cap = v.out[0].len / width;
    if (v.out[1].len < cap)
        cap = v.out[1].len;
    Py_ssize_t i, nulls = 0;

    Py_BEGIN_ALLOW_THREADS
    if (width == 8)
        i = floats_loop(b, n, out, valid, cap, 8, &nulls);
    else if (width == 4)
        i = floats_loop(b, n, out, valid, cap, 4, &nulls);
    else
        i = floats_loop(b, n, out, valid, cap, 2, &nulls);
    Py_END_ALLOW_THREADS
    release(&v);
    return counts(i, nulls);
}

/* -------------------------------------------------------------- bools --- */

/* bools(stream, out u8[cap], valid u8[cap]) -> (n, nulls) or None: bodies of one
 * byte, 0 or 1; nulls are 0. */
static PyObject *
k_bools(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Views v;
    if (!check_args(nargs, 3, "bools"))
        return NULL;
    if (!acquire(&v, args, 2))
        Py_RETURN_NONE;
    const u8 *b = (const u8 *)v.in.buf;
    Py_ssize_t n = v.in.len;
    u8 *out = (u8 *)v.out[0].buf, *valid = (u8 *)v.out[1].buf;
    Py_ssize_t cap = v.out[0].len < v.out[1].len ? v.out[0].len : v.out[1].len;
    Py_ssize_t i = 0, nulls = 0;

    Py_BEGIN_ALLOW_THREADS
    Py_ssize_t p = 0;
    uint64_t t;
    while (p < n) {
        if (i >= cap)
            goto bad;
        t = b[p];
        if (t < 0x80) {
            p++;
        } else if (!read_long_tag(b, n, &p, &t)) {
            goto bad;
        }
        if (t == 0) {
            MARK_NULL(valid, i, nulls);
            out[i++] = 0;
            continue;
        }
        if (t != 2 || p >= n || b[p] > 1)
            goto bad;
        MARK_VALID(valid, i, nulls);
        out[i++] = b[p++];
    }
    goto done;
bad:
    i = -1;
done:
    Py_END_ALLOW_THREADS
    release(&v);
    return counts(i, nulls);
}

/* ---------------------------------------------------------- varbinary --- */

/* For a value of `len` <= 16 bytes read as two words: the bytes of each word
 * that belong to it. */
static const uint64_t LOW_MASK16[17] = {
    0, 0xFFull, 0xFFFFull, 0xFFFFFFull, 0xFFFFFFFFull, 0xFFFFFFFFFFull,
    0xFFFFFFFFFFFFull, 0xFFFFFFFFFFFFFFull, ~0ull, ~0ull, ~0ull, ~0ull, ~0ull, ~0ull,
    ~0ull, ~0ull, ~0ull,
};
static const uint64_t HIGH_MASK16[17] = {
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFFull, 0xFFFFull, 0xFFFFFFull, 0xFFFFFFFFull,
    0xFFFFFFFFFFull, 0xFFFFFFFFFFFFull, 0xFFFFFFFFFFFFFFull, ~0ull,
};

/* Whether any of the `len` bytes at p has its top bit set. */
static inline uint64_t
high_bits(const u8 *p, Py_ssize_t len)
{
    uint64_t acc = 0;
    Py_ssize_t k = 0;
    for (; k + 8 <= len; k += 8)
        acc |= load64(p + k);
    for (; k < len; k++)
        acc |= p[k];
    return acc & 0x8080808080808080ull;
}

/* varbinary(stream, offsets i64[cap + 1], data u8[dcap], valid u8[cap])
 * -> (n, nulls, data bytes, ascii) or None: bodies copied compactly into data,
 * offsets[0] = 0 and offsets[i + 1] the end of value i.  `ascii` says that no
 * byte of any value has its top bit set (then the values are valid UTF-8
 * without a further pass): checked on the bytes while they are in registers. */
static PyObject *
k_varbinary(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Views v;
    if (!check_args(nargs, 4, "varbinary"))
        return NULL;
    if (!acquire(&v, args, 3))
        Py_RETURN_NONE;
    const u8 *b = (const u8 *)v.in.buf;
    Py_ssize_t n = v.in.len;
    int64_t *offsets = (int64_t *)v.out[0].buf;
    u8 *data = (u8 *)v.out[1].buf, *valid = (u8 *)v.out[2].buf;
    Py_ssize_t cap = v.out[0].len / 8 - 1, dcap = v.out[1].len;
    if (v.out[2].len < cap)
        cap = v.out[2].len;
    Py_ssize_t i = 0, nulls = 0, d = 0;
    uint64_t high = 0;
    if (cap < 0) {
        release(&v);
        Py_RETURN_NONE;
    }

    Py_BEGIN_ALLOW_THREADS
    Py_ssize_t p = 0;
    uint64_t t;
    offsets[0] = 0;
    while (p < n) {
        if (i >= cap)
            goto bad;
        t = b[p];
        if (t < 0x80) {
            p++;
        } else if (!read_long_tag(b, n, &p, &t)) {
            goto bad;
        }
        if (t == 0) {
            MARK_NULL(valid, i, nulls);
        } else {
            uint64_t len = t - 1;
            if (len > (uint64_t)(n - p) || len > (uint64_t)(dcap - d))
                goto bad;
            if (len <= 16 && n - p >= 16 && dcap - d >= 16) {
                /* short values: one fixed-size copy, no call */
                uint64_t w0 = load64(b + p), w1 = load64(b + p + 8);
                memcpy(data + d, &w0, 8);
                memcpy(data + d + 8, &w1, 8);
                /* table lookups, not a branch: lengths vary at random */
                high |= (w0 & LOW_MASK16[len]) | (w1 & HIGH_MASK16[len]);
            } else {
                memcpy(data + d, b + p, (size_t)len);
                high |= high_bits(b + p, (Py_ssize_t)len);
            }
            p += (Py_ssize_t)len;
            d += (Py_ssize_t)len;
            MARK_VALID(valid, i, nulls);
        }
        offsets[++i] = d;
    }
    goto done;
bad:
    i = -1;
done:
    Py_END_ALLOW_THREADS
    release(&v);
    if (i < 0)
        Py_RETURN_NONE;
    return Py_BuildValue("(nnnO)", i, nulls, d,
                         (high & 0x8080808080808080ull) ? Py_False : Py_True);
}

/* --------------------------------------------------------------- utf8 --- */

/* Length of the well-formed UTF-8 sequence at p (Unicode table 3-7, as Python's
 * strict decoder: no overlongs, no surrogates, nothing above U+10FFFF), or 0. */
static inline Py_ssize_t
utf8_seq(const u8 *p, Py_ssize_t left)
{
    u8 c = p[0];
    if (c < 0xC2)
        return 0; /* continuation byte or overlong 2-byte lead */
    if (c < 0xE0) {
        if (left < 2 || (p[1] & 0xC0) != 0x80)
            return 0;
        return 2;
    }
    if (c < 0xF0) {
        if (left < 3)
            return 0;
        u8 lo = 0x80, hi = 0xBF;
        if (c == 0xE0)
            lo = 0xA0;
        else if (c == 0xED)
            hi = 0x9F;
        if (p[1] < lo || p[1] > hi || (p[2] & 0xC0) != 0x80)
            return 0;
        return 3;
    }
    if (c < 0xF5) {
        if (left < 4)
            return 0;
        u8 lo = 0x80, hi = 0xBF;
        if (c == 0xF0)
            lo = 0x90;
        else if (c == 0xF4)
            hi = 0x8F;
        if (p[1] < lo || p[1] > hi || (p[2] & 0xC0) != 0x80 || (p[3] & 0xC0) != 0x80)
            return 0;
        return 4;
    }
    return 0;
}

/* utf8(data, offsets i64[m]) -> bool: True iff data is well-formed UTF-8 and no
 * non-empty value data[offsets[i]:offsets[i+1]] starts inside a character
 * (together: every value is well-formed).  False also for offsets outside the
 * data: the reference decides those. */
static PyObject *
k_utf8(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Py_buffer dv, ov;
    int ok = 1;
    if (!check_args(nargs, 2, "utf8"))
        return NULL;
    if (PyObject_GetBuffer(args[0], &dv, PyBUF_SIMPLE) < 0) {
        PyErr_Clear();
        Py_RETURN_FALSE;
    }
    if (PyObject_GetBuffer(args[1], &ov, PyBUF_SIMPLE) < 0) {
        PyErr_Clear();
        PyBuffer_Release(&dv);
        Py_RETURN_FALSE;
    }
    const u8 *d = (const u8 *)dv.buf;
    Py_ssize_t n = dv.len, m = ov.len / 8;
    const int64_t *off = (const int64_t *)ov.buf;

    Py_BEGIN_ALLOW_THREADS
    Py_ssize_t p = 0;
    int ascii = 1;
    while (p < n) {
        if (n - p >= 16) {
            uint64_t w0 = load64(d + p), w1 = load64(d + p + 8);
            if (((w0 | w1) & 0x8080808080808080ull) == 0) {
                p += 16;
                continue;
            }
        }
        if (d[p] < 0x80) {
            p++;
            continue;
        }
        ascii = 0;
        Py_ssize_t k = utf8_seq(d + p, n - p);
        if (k == 0) {
            ok = 0;
            break;
        }
        p += k;
    }
    if (ok && !ascii) {
        for (Py_ssize_t i = 0; i + 1 < m; i++) {
            int64_t a = off[i];
            if (off[i + 1] > a) {
                if (a < 0 || a >= n || (d[a] & 0xC0) == 0x80) {
                    ok = 0;
                    break;
                }
            }
        }
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&ov);
    PyBuffer_Release(&dv);
    return PyBool_FromLong(ok);
}

/* ------------------------------------------------------ presence, lengths --- */

/* runs_sum(runs i32[]) -> sum or None if a run is negative. */
static PyObject *
k_runs_sum(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Py_buffer rv;
    int64_t sum = 0;
    int neg = 0;
    if (!check_args(nargs, 1, "runs_sum"))
        return NULL;
    if (PyObject_GetBuffer(args[0], &rv, PyBUF_SIMPLE) < 0) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    const int32_t *r = (const int32_t *)rv.buf;
    Py_ssize_t m = rv.len / 4;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t j = 0; j < m; j++) {
        neg |= r[j] < 0;
        sum += r[j];
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&rv);
    if (neg)
        Py_RETURN_NONE;
    return PyLong_FromLongLong(sum);
}

/* presence(runs i32[], out u8[total]) -> bool: runs alternate present (1),
 * absent (0), present...; False unless they are non-negative and fill `out`
 * exactly. */
static PyObject *
k_presence(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Views v;
    int ok = 1;
    if (!check_args(nargs, 2, "presence"))
        return NULL;
    if (!acquire(&v, args, 1))
        Py_RETURN_FALSE;
    const int32_t *r = (const int32_t *)v.in.buf;
    Py_ssize_t m = v.in.len / 4, size = v.out[0].len;
    u8 *out = (u8 *)v.out[0].buf;
    Py_BEGIN_ALLOW_THREADS
    Py_ssize_t pos = 0;
    for (Py_ssize_t j = 0; j < m; j++) {
        int32_t run = r[j];
        if (run < 0 || run > size - pos) {
            ok = 0;
            break;
        }
        memset(out + pos, (j & 1) == 0, (size_t)run);
        pos += run;
    }
    if (pos != size)
        ok = 0;
    Py_END_ALLOW_THREADS
    release(&v);
    return PyBool_FromLong(ok);
}

/* offsets(lengths i32[m], out i64[m + 1]) -> total or None if a length is
 * negative. */
static PyObject *
k_offsets(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Views v;
    int ok = 1;
    int64_t sum = 0;
    if (!check_args(nargs, 2, "offsets"))
        return NULL;
    if (!acquire(&v, args, 1))
        Py_RETURN_NONE;
    const int32_t *len = (const int32_t *)v.in.buf;
    Py_ssize_t m = v.in.len / 4;
    int64_t *out = (int64_t *)v.out[0].buf;
    if (v.out[0].len / 8 < m + 1) {
        release(&v);
        Py_RETURN_NONE;
    }
    Py_BEGIN_ALLOW_THREADS
    out[0] = 0;
    for (Py_ssize_t j = 0; j < m; j++) {
        ok &= len[j] >= 0;
        sum += len[j];
        out[j + 1] = sum;
    }
    Py_END_ALLOW_THREADS
    release(&v);
    if (!ok)
        Py_RETURN_NONE;
    return PyLong_FromLongLong(sum);
}

/* ------------------------------------------------------------- ranges --- */

/* copy_ranges(src u8[], starts i64[m], lengths i64[m], dst u8[]) -> bool: dst
 * becomes src[starts[j] : starts[j] + lengths[j]] for j = 0..m-1, back to back
 * (the bytes of a take of strings or bytes).  False, with dst partly written,
 * unless every range lies inside src and the lengths fill dst exactly. */
static PyObject *
k_copy_ranges(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Py_buffer sv, stv, lv, dv;
    int ok = 1;
    if (!check_args(nargs, 4, "copy_ranges"))
        return NULL;
    if (PyObject_GetBuffer(args[0], &sv, PyBUF_SIMPLE) < 0) {
        PyErr_Clear();
        Py_RETURN_FALSE;
    }
    if (PyObject_GetBuffer(args[1], &stv, PyBUF_SIMPLE) < 0) {
        PyErr_Clear();
        PyBuffer_Release(&sv);
        Py_RETURN_FALSE;
    }
    if (PyObject_GetBuffer(args[2], &lv, PyBUF_SIMPLE) < 0) {
        PyErr_Clear();
        PyBuffer_Release(&stv);
        PyBuffer_Release(&sv);
        Py_RETURN_FALSE;
    }
    if (PyObject_GetBuffer(args[3], &dv, PyBUF_WRITABLE) < 0) {
        PyErr_Clear();
        PyBuffer_Release(&lv);
        PyBuffer_Release(&stv);
        PyBuffer_Release(&sv);
        Py_RETURN_FALSE;
    }
    const u8 *src = (const u8 *)sv.buf;
    u8 *dst = (u8 *)dv.buf;
    const int64_t *starts = (const int64_t *)stv.buf, *lengths = (const int64_t *)lv.buf;
    Py_ssize_t m = stv.len / 8, n = sv.len, dn = dv.len;
    if (lv.len / 8 != m || stv.len % 8 || lv.len % 8)
        ok = 0;
    Py_BEGIN_ALLOW_THREADS
    Py_ssize_t d = 0;
    for (Py_ssize_t j = 0; ok && j < m; j++) {
        int64_t s = starts[j], len = lengths[j];
        if (s < 0 || len < 0 || s > n || len > n - s || len > dn - d) {
            ok = 0;
            break;
        }
        if (len <= 16 && n - s >= 16 && dn - d >= 16) {
            /* short values: one fixed-size copy (the bytes past len are
             * overwritten by the next value or lie inside dst) */
            memcpy(dst + d, src + s, 16);
        } else {
            memcpy(dst + d, src + s, (size_t)len);
        }
        d += (Py_ssize_t)len;
    }
    if (d != dn)
        ok = 0;
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&dv);
    PyBuffer_Release(&lv);
    PyBuffer_Release(&stv);
    PyBuffer_Release(&sv);
    return PyBool_FromLong(ok);
}

/* route(ids i32[n], base i64[k], out i64[n]) -> bool: out[r] = base[ids[r]] + the
 * number of earlier rows with the same ID, or -1 where base[ids[r]] < 0: where row
 * r's value sits in the parts of a column laid end to end (part s from base[s]),
 * in one pass.  False unless every ID is in 0..k-1.  `base` is used as the
 * running position and left advanced. */
static PyObject *
k_route(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Views v;
    int ok = 1;
    if (!check_args(nargs, 3, "route"))
        return NULL;
    if (!acquire(&v, args, 2))
        Py_RETURN_FALSE;
    const int32_t *ids = (const int32_t *)v.in.buf;
    Py_ssize_t n = v.in.len / 4, k = v.out[0].len / 8;
    int64_t *next = (int64_t *)v.out[0].buf, *out = (int64_t *)v.out[1].buf;
    if (v.out[1].len / 8 < n || v.in.len % 4)
        ok = 0;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t r = 0; ok && r < n; r++) {
        int32_t s = ids[r];
        if (s < 0 || s >= k) {
            ok = 0;
            break;
        }
        int64_t at = next[s];
        if (at < 0) {
            out[r] = -1;
        } else {
            out[r] = at;
            next[s] = at + 1;
        }
    }
    Py_END_ALLOW_THREADS
    release(&v);
    return PyBool_FromLong(ok);
}

/* take_lengths(offsets i64[m + 1], idx i64[n], valid u8[m] or [0], out i64[n + 1])
 * -> total or None: the offsets of a take of strings or bytes; row r holds value
 * idx[r], and nothing (length 0) where idx[r] is -1 or that value is not valid.
 * None unless every idx is in -1..m-1 and each taken value's offsets ascend. */
static PyObject *
k_take_lengths(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Py_buffer ov, iv, vv, outv;
    int ok = 1;
    int64_t d = 0;
    if (!check_args(nargs, 4, "take_lengths"))
        return NULL;
    if (PyObject_GetBuffer(args[0], &ov, PyBUF_SIMPLE) < 0) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    if (PyObject_GetBuffer(args[1], &iv, PyBUF_SIMPLE) < 0) {
        PyErr_Clear();
        PyBuffer_Release(&ov);
        Py_RETURN_NONE;
    }
    if (PyObject_GetBuffer(args[2], &vv, PyBUF_SIMPLE) < 0) {
        PyErr_Clear();
        PyBuffer_Release(&iv);
        PyBuffer_Release(&ov);
        Py_RETURN_NONE;
    }
    if (PyObject_GetBuffer(args[3], &outv, PyBUF_WRITABLE) < 0) {
        PyErr_Clear();
        PyBuffer_Release(&vv);
        PyBuffer_Release(&iv);
        PyBuffer_Release(&ov);
        Py_RETURN_NONE;
    }
    const int64_t *off = (const int64_t *)ov.buf, *idx = (const int64_t *)iv.buf;
    const u8 *valid = (const u8 *)vv.buf;
    int64_t *out = (int64_t *)outv.buf;
    Py_ssize_t m = ov.len / 8 - 1, n = iv.len / 8;
    int has_valid = vv.len > 0;
    if (m < 0 || ov.len % 8 || iv.len % 8 || outv.len / 8 < n + 1
        || (has_valid && vv.len != m))
        ok = 0;
    Py_BEGIN_ALLOW_THREADS
    if (ok)
        out[0] = 0;
    for (Py_ssize_t r = 0; ok && r < n; r++) {
        int64_t i = idx[r];
        if (i < -1 || i >= m) {
            ok = 0;
            break;
        }
        if (i >= 0 && (!has_valid || valid[i])) {
            int64_t len = off[i + 1] - off[i];
            if (off[i] < 0 || len < 0 || len > INT64_MAX - d) {
                ok = 0;
                break;
            }
            d += len;
        }
        out[r + 1] = d;
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&outv);
    PyBuffer_Release(&vv);
    PyBuffer_Release(&iv);
    PyBuffer_Release(&ov);
    if (!ok)
        Py_RETURN_NONE;
    return PyLong_FromLongLong(d);
}

/* take_bytes(offsets i64[m + 1], data u8[], idx i64[n], out_offsets i64[n + 1],
 * out u8[]) -> bool: the bytes of a take whose offsets take_lengths made: row r's
 * out_offsets[r + 1] - out_offsets[r] bytes from data[offsets[idx[r]]:].  False
 * unless every index and every range is in bounds and the rows fill out exactly. */
static PyObject *
k_take_bytes(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Py_buffer bv[5];
    int ok = 1, got = 0;
    if (!check_args(nargs, 5, "take_bytes"))
        return NULL;
    for (; got < 5; got++) {
        if (PyObject_GetBuffer(args[got], &bv[got],
                               got == 4 ? PyBUF_WRITABLE : PyBUF_SIMPLE) < 0) {
            PyErr_Clear();
            for (int j = 0; j < got; j++)
                PyBuffer_Release(&bv[j]);
            Py_RETURN_FALSE;
        }
    }
    const int64_t *off = (const int64_t *)bv[0].buf, *idx = (const int64_t *)bv[2].buf;
    const int64_t *oo = (const int64_t *)bv[3].buf;
    const u8 *src = (const u8 *)bv[1].buf;
    u8 *dst = (u8 *)bv[4].buf;
    Py_ssize_t m = bv[0].len / 8 - 1, sn = bv[1].len, n = bv[2].len / 8, dn = bv[4].len;
    if (m < 0 || bv[0].len % 8 || bv[2].len % 8 || bv[3].len / 8 != n + 1 || bv[3].len % 8)
        ok = 0;
    Py_BEGIN_ALLOW_THREADS
    if (ok && (oo[0] != 0 || oo[n] != dn))
        ok = 0;
    for (Py_ssize_t r = 0; ok && r < n; r++) {
        int64_t a = oo[r], len = oo[r + 1] - a;
        if (len == 0)
            continue;
        int64_t i = idx[r];
        if (i < 0 || i >= m || len < 0 || a < 0 || a > dn - len) {
            ok = 0;
            break;
        }
        int64_t s = off[i];
        if (s < 0 || s > sn || len > sn - s) {
            ok = 0;
            break;
        }
        if (len <= 16 && sn - s >= 16 && dn - a >= 16)
            memcpy(dst + a, src + s, 16); /* the excess is overwritten by later rows */
        else
            memcpy(dst + a, src + s, (size_t)len);
    }
    Py_END_ALLOW_THREADS
    for (int j = 0; j < 5; j++)
        PyBuffer_Release(&bv[j]);
    return PyBool_FromLong(ok);
}

/* count_ranges(stream, ends i64[m], out i64[m]) -> bool: the values in each byte
 * range [ends[j - 1], ends[j]) of the stream (ends[-1] taken as 0), in one walk:
 * the segments of a column of many super types, laid end to end and counted at
 * once.  False unless the ends ascend, the last is the stream's end and every
 * range ends exactly after a value (the reference then counts range by range and
 * describes the first bad one). */
static PyObject *
k_count_ranges(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Views v;
    int ok = 1;
    if (!check_args(nargs, 3, "count_ranges"))
        return NULL;
    if (!acquire(&v, args + 0, 0))
        Py_RETURN_FALSE;
    Py_buffer ev, ov;
    if (PyObject_GetBuffer(args[1], &ev, PyBUF_SIMPLE) < 0) {
        PyErr_Clear();
        release(&v);
        Py_RETURN_FALSE;
    }
    if (PyObject_GetBuffer(args[2], &ov, PyBUF_WRITABLE) < 0) {
        PyErr_Clear();
        PyBuffer_Release(&ev);
        release(&v);
        Py_RETURN_FALSE;
    }
    const u8 *b = (const u8 *)v.in.buf;
    const int64_t *ends = (const int64_t *)ev.buf;
    int64_t *out = (int64_t *)ov.buf;
    Py_ssize_t n = v.in.len, m = ev.len / 8;
    if (ev.len % 8 || ov.len / 8 < m || (m == 0 && n != 0) || (m > 0 && ends[m - 1] != n))
        ok = 0;
    Py_BEGIN_ALLOW_THREADS
    Py_ssize_t p = 0;
    uint64_t t;
    for (Py_ssize_t j = 0; ok && j < m; j++) {
        int64_t end = ends[j], i = 0;
        if (end < p || end > n) {
            ok = 0;
            break;
        }
        while (p < end) {
            if (!read_tag(b, end, &p, &t)) {
                ok = 0;
                break;
            }
            if (t > 1) {
                if (t - 1 > (uint64_t)(end - p)) {
                    ok = 0;
                    break;
                }
                p += (Py_ssize_t)(t - 1);
            }
            i++;
        }
        out[j] = i;
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&ov);
    PyBuffer_Release(&ev);
    release(&v);
    return PyBool_FromLong(ok);
}

/* compare_bytes(offsets i64[n+1], data u8, literal, out i8[>= n]) -> bool: each value
 * data[offsets[r]:offsets[r + 1]] compared with `literal` in byte order (UTF-8 byte
 * order is code point order), -1 / 0 / 1; a proper prefix is the lesser.  One memcmp
 * per value, where the reference needs a gather per byte of the literal.  False when
 * an offset is out of bounds or they descend (the reference raises). */
static PyObject *
k_compare_bytes(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Py_buffer bv[4];
    int ok = 1, got = 0;
    if (!check_args(nargs, 4, "compare_bytes"))
        return NULL;
    for (; got < 4; got++) {
        if (PyObject_GetBuffer(args[got], &bv[got],
                               got == 3 ? PyBUF_WRITABLE : PyBUF_SIMPLE) < 0) {
            PyErr_Clear();
            for (int j = 0; j < got; j++)
                PyBuffer_Release(&bv[j]);
            Py_RETURN_FALSE;
        }
    }
    const int64_t *off = (const int64_t *)bv[0].buf;
    const u8 *src = (const u8 *)bv[1].buf, *lit = (const u8 *)bv[2].buf;
    signed char *out = (signed char *)bv[3].buf;
    Py_ssize_t n = bv[0].len / 8 - 1, sn = bv[1].len, ln = bv[2].len;
    if (n < 0 || bv[0].len % 8 || bv[3].len < n)
        ok = 0;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t r = 0; ok && r < n; r++) {
        int64_t s = off[r], e = off[r + 1];
        if (s < 0 || e < s || e > sn) {
            ok = 0;
            break;
        }
        int64_t len = e - s;
        int c = memcmp(src + s, lit, (size_t)(len < ln ? len : ln));
        if (c == 0)
            c = (len > ln) - (len < ln);
        out[r] = (signed char)((c > 0) - (c < 0));
    }
    Py_END_ALLOW_THREADS
    for (int j = 0; j < 4; j++)
        PyBuffer_Release(&bv[j]);
    return PyBool_FromLong(ok);
}

/* ------------------------------------------------------------ intcomp --- */

/* SuperDB's integer coding (Go package ronanh/intcomp, csup_async.superdb.intcomp):
 * blocks of delta variable-byte values (fewer than 128 (256) values) or of
 * bit-packed groups (a multiple of 128 (256) values: per 128 (256), a header word
 * of four group widths, sign (zig-zag) bits and, for 64-bit signed, trailing-zero
 * shifts, then each group's 32 (64) values packed LSB first), the last word the
 * last block's length.  in: the segment's words (4 or 8 bytes each, whole);
 * out: uint64 values, at least as many as the headers claim.  Returns the count,
 * -1 for anything malformed (the numpy reference then says what). */
static Py_ssize_t
intcomp_decode(const u8 *buf, Py_ssize_t nbytes, int width, int is_signed,
               uint64_t *out, Py_ssize_t cap)
{
    Py_ssize_t wb = width / 8;
    if (nbytes % wb)
        return -1;
    Py_ssize_t nw = nbytes / wb;
    if (nw == 0)
        return 0;
    nw -= 1; /* the last block's length */
    const uint32_t *w32 = (const uint32_t *)buf;
    const uint64_t *w64 = (const uint64_t *)buf;
#define W(i) (width == 32 ? (uint64_t)w32[(i)] : w64[(i)])
    uint64_t mask = width == 32 ? 0xFFFFFFFFull : ~0ull;
    Py_ssize_t block = width == 32 ? 128 : 256, group = block / 4;
    Py_ssize_t pos = 0, n = 0;
    while (pos < nw) {
        uint64_t head = W(pos), count, length;
        if (width == 32) {
            if (pos + 1 >= nw)
                return -1;
            count = head;
            length = W(pos + 1);
        } else {
            count = head & 0xFFFFFFFFull;
            length = head >> 32;
        }
        if (length < 1 || length > (uint64_t)(nw - pos))
            return -1;
        Py_ssize_t end = pos + (Py_ssize_t)length;
        if (out == NULL) { /* counting only: the headers' claims */
            if (count > (uint64_t)256 * (uint64_t)nw)
                return -1;
            n += (Py_ssize_t)count;
            pos = end;
            continue;
        }
        if (count > (uint64_t)(cap - n))
            return -1;
        if ((Py_ssize_t)count < block) {
            Py_ssize_t p = pos + (width == 32 ? 2 : 1);
            uint64_t acc = 0, prev = 0;
            int shift = 0;
            Py_ssize_t got = 0;
            for (; p < end && got < (Py_ssize_t)count; p++) {
                uint64_t word = W(p);
                for (int k = (int)wb - 1; k >= 0 && got < (Py_ssize_t)count; k--) {
                    uint64_t c = (word >> (8 * k)) & 0xFF;
                    if (shift < 64)
                        acc |= (c & 0x7F) << shift;
                    shift += 7;
                    if (!(c & 0x80)) {
                        prev = (prev + acc) & mask;
                        out[n + got++] = prev;
                        acc = 0;
                        shift = 0;
                    }
                }
            }
            if (got != (Py_ssize_t)count)
                return -1;
        } else {
            if (count % block)
                return -1;
            Py_ssize_t p = pos + (width == 32 ? 3 : 2);
            if (p > end)
                return -1;
            uint64_t prev = W(p - 1);
            Py_ssize_t o = n;
            for (uint64_t b = 0; b < count / block; b++) {
                if (p >= end)
                    return -1;
                uint64_t h = W(p++);
                for (int k = 0; k < 4; k++) {
                    int sh = 24 - 8 * k;
                    int bits = (int)((h >> sh) & 0x7F);
                    int sign = (int)((h >> (sh + 7)) & 1);
                    int ntz = (width == 64 && is_signed) ? (int)((h >> (56 - 8 * k)) & 0xFF) : 0;
                    if (bits > width || ntz > bits)
                        return -1;
                    int bw = bits - ntz;
                    if (p + bw > end)
                        return -1;
                    for (Py_ssize_t j = 0; j < group; j++) {
                        uint64_t v = 0;
                        if (bw) {
                            uint64_t bit = (uint64_t)j * (uint64_t)bw;
                            Py_ssize_t wi = (Py_ssize_t)(bit / width);
                            int off = (int)(bit % width);
                            v = W(p + wi) >> off;
                            if (off + bw > width && wi + 1 < bw)
                                v |= W(p + wi + 1) << (width - off);
                            if (bw < 64)
                                v &= (1ull << bw) - 1;
                        }
                        if (sign)
                            v = (v >> 1) ^ (0 - (v & 1));
                        v <<= ntz;
                        prev = (prev + v) & mask;
                        out[o++] = prev;
                    }
                    p += bw;
                }
            }
        }
        n += (Py_ssize_t)count;
        pos = end;
    }
#undef W
    return n;
}

static PyObject *
k_intcomp(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (!check_args(nargs, 4, "intcomp"))
        return NULL;
    int width = (int)PyLong_AsLong(args[1]);
    int is_signed = PyObject_IsTrue(args[2]);
    if (PyErr_Occurred()) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    if (width != 32 && width != 64)
        Py_RETURN_NONE;
    Py_buffer in, ov;
    if (PyObject_GetBuffer(args[0], &in, PyBUF_SIMPLE) < 0) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    if (args[3] == Py_None) { /* how many values the block headers claim */
        Py_ssize_t total;
        Py_BEGIN_ALLOW_THREADS
        total = intcomp_decode((const u8 *)in.buf, in.len, width, is_signed, NULL, 0);
        Py_END_ALLOW_THREADS
        PyBuffer_Release(&in);
        if (total < 0)
            Py_RETURN_NONE;
        return PyLong_FromSsize_t(total);
    }
    if (PyObject_GetBuffer(args[3], &ov, PyBUF_WRITABLE) < 0) {
        PyErr_Clear();
        PyBuffer_Release(&in);
        Py_RETURN_NONE;
    }
    Py_ssize_t n;
    Py_BEGIN_ALLOW_THREADS
    n = intcomp_decode((const u8 *)in.buf, in.len, width, is_signed, (uint64_t *)ov.buf,
                       ov.len / 8);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&ov);
    PyBuffer_Release(&in);
    if (n < 0)
        Py_RETURN_NONE;
    return PyLong_FromSsize_t(n);
}

/* ------------------------------------------------------------- module --- */


/* ------------------------------------------------- union assembly (v23) --- */

/* scatter_offsets(offsets i64[m + 1], mask u8[n], out i64[n + 1]) -> True if the
 * mask marks exactly m rows and the offsets ascend: the offsets (from 0) of m
 * values spread over the rows the mask marks, empty elsewhere (a column's present
 * values made one value per row).  One pass; numpy needs four. */
static PyObject *
k_scatter_offsets(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Py_buffer ov, mv, outv;
    int ok = 1;
    if (!check_args(nargs, 3, "scatter_offsets"))
        return NULL;
    if (PyObject_GetBuffer(args[0], &ov, PyBUF_SIMPLE) < 0) {
        PyErr_Clear();
        Py_RETURN_FALSE;
    }
    if (PyObject_GetBuffer(args[1], &mv, PyBUF_SIMPLE) < 0) {
        PyErr_Clear();
        PyBuffer_Release(&ov);
        Py_RETURN_FALSE;
    }
    if (PyObject_GetBuffer(args[2], &outv, PyBUF_WRITABLE) < 0) {
        PyErr_Clear();
        PyBuffer_Release(&mv);
        PyBuffer_Release(&ov);
        Py_RETURN_FALSE;
    }
    const int64_t *off = (const int64_t *)ov.buf;
    const u8 *mask = (const u8 *)mv.buf;
    int64_t *out = (int64_t *)outv.buf;
    Py_ssize_t m = ov.len / 8 - 1, n = mv.len;
    if (m < 0 || ov.len % 8 || outv.len % 8 || outv.len / 8 != n + 1)
        ok = 0;
    Py_BEGIN_ALLOW_THREADS
    if (ok) {
        Py_ssize_t j = 0;
        int64_t at = 0;
        out[0] = 0;
        for (Py_ssize_t r = 0; r < n; r++) {
            if (mask[r]) {
                if (j >= m) {
                    ok = 0;
                    break;
                }
                int64_t d = off[j + 1] - off[j];
                if (d < 0) {
                    ok = 0;
                    break;
                }
                at += d;
                j++;
            }
            out[r + 1] = at;
        }
        if (j != m)
            ok = 0;
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&outv);
    PyBuffer_Release(&mv);
    PyBuffer_Release(&ov);
    return PyBool_FromLong(ok);
}

/* fill_runs(runs i64[m], first i32[1], second i32[1], out i32[n]) -> True if no run
 * is negative and they add up to at most n: runs alternately of `first` and of
 * `second` (from `first`), the rest of out `second`.  A v23 two-member union's
 * tags from its run lengths (first 1, second 0), or those tags already mapped to
 * a column's members. */
static PyObject *
k_fill_runs(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Py_buffer rv, av, bv, outv;
    int ok = 1;
    if (!check_args(nargs, 4, "fill_runs"))
        return NULL;
    if (PyObject_GetBuffer(args[0], &rv, PyBUF_SIMPLE) < 0) {
        PyErr_Clear();
        Py_RETURN_FALSE;
    }
    if (PyObject_GetBuffer(args[1], &av, PyBUF_SIMPLE) < 0) {
        PyErr_Clear();
        PyBuffer_Release(&rv);
        Py_RETURN_FALSE;
    }
    if (PyObject_GetBuffer(args[2], &bv, PyBUF_SIMPLE) < 0) {
        PyErr_Clear();
        PyBuffer_Release(&av);
        PyBuffer_Release(&rv);
        Py_RETURN_FALSE;
    }
    if (PyObject_GetBuffer(args[3], &outv, PyBUF_WRITABLE) < 0) {
        PyErr_Clear();
        PyBuffer_Release(&bv);
        PyBuffer_Release(&av);
        PyBuffer_Release(&rv);
        Py_RETURN_FALSE;
    }
    const int64_t *runs = (const int64_t *)rv.buf;
    int32_t *out = (int32_t *)outv.buf;
    Py_ssize_t m = rv.len / 8, n = outv.len / 4;
    int32_t vals[2] = {0, 0};
    if (rv.len % 8 || outv.len % 4 || av.len != 4 || bv.len != 4)
        ok = 0;
    else {
        memcpy(&vals[0], av.buf, 4);
        memcpy(&vals[1], bv.buf, 4);
    }
    Py_BEGIN_ALLOW_THREADS
    Py_ssize_t pos = 0;
    for (Py_ssize_t j = 0; ok && j < m; j++) {
        int64_t run = runs[j];
        if (run < 0 || run > n - pos) {
            ok = 0;
            break;
        }
        int32_t v = vals[j & 1];
        for (int64_t k = 0; k < run; k++)
            out[pos + k] = v;
        pos += run;
    }
    for (Py_ssize_t r = pos; ok && r < n; r++)
        out[r] = vals[1];
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&outv);
    PyBuffer_Release(&bv);
    PyBuffer_Release(&av);
    PyBuffer_Release(&rv);
    return PyBool_FromLong(ok);
}

/* map_tags(tags i64[n], to i32[k], out i32[n], counts i64[k]) -> True if every tag
 * is in 0..k-1: out[r] = to[tags[r]], and counts[t] the rows of each tag (counts
 * zeroed here).  A union's tags counted and mapped to a column's members in one
 * pass (numpy: a bincount and a gather). */
static PyObject *
k_map_tags(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Py_buffer tv, mv, outv, cv;
    int ok = 1;
    if (!check_args(nargs, 4, "map_tags"))
        return NULL;
    if (PyObject_GetBuffer(args[0], &tv, PyBUF_SIMPLE) < 0) {
        PyErr_Clear();
        Py_RETURN_FALSE;
    }
    if (PyObject_GetBuffer(args[1], &mv, PyBUF_SIMPLE) < 0) {
        PyErr_Clear();
        PyBuffer_Release(&tv);
        Py_RETURN_FALSE;
    }
    if (PyObject_GetBuffer(args[2], &outv, PyBUF_WRITABLE) < 0) {
        PyErr_Clear();
        PyBuffer_Release(&mv);
        PyBuffer_Release(&tv);
        Py_RETURN_FALSE;
    }
    if (PyObject_GetBuffer(args[3], &cv, PyBUF_WRITABLE) < 0) {
        PyErr_Clear();
        PyBuffer_Release(&outv);
        PyBuffer_Release(&mv);
        PyBuffer_Release(&tv);
        Py_RETURN_FALSE;
    }
    const int64_t *tags = (const int64_t *)tv.buf;
    const int32_t *to = (const int32_t *)mv.buf;
    int32_t *out = (int32_t *)outv.buf;
    int64_t *cnt = (int64_t *)cv.buf;
    Py_ssize_t n = tv.len / 8, k = mv.len / 4;
    if (tv.len % 8 || mv.len % 4 || outv.len != n * 4 || cv.len != k * 8)
        ok = 0;
    Py_BEGIN_ALLOW_THREADS
    if (ok)
        memset(cnt, 0, (size_t)k * 8);
    for (Py_ssize_t r = 0; ok && r < n; r++) {
        int64_t t = tags[r];
        if (t < 0 || t >= k) {
            ok = 0;
            break;
        }
        cnt[t]++;
        out[r] = to[t];
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&cv);
    PyBuffer_Release(&outv);
    PyBuffer_Release(&mv);
    PyBuffer_Release(&tv);
    return PyBool_FromLong(ok);
}

static PyMethodDef methods[] = {
    {"compare_bytes", (PyCFunction)(void (*)(void))k_compare_bytes, METH_FASTCALL,
     "compare_bytes(offsets, data, literal, out) -> bool"},
    {"count_ranges", (PyCFunction)(void (*)(void))k_count_ranges, METH_FASTCALL,
     "count_ranges(stream, ends, out) -> bool: values per byte range"},
    {"count", (PyCFunction)(void (*)(void))k_count, METH_FASTCALL,
     "count(stream) -> number of values, or None if the stream is not whole"},
    {"marks", (PyCFunction)(void (*)(void))k_marks, METH_FASTCALL,
     "marks(stream, out, every) -> values, recording where every every-th starts"},
    {"skip", (PyCFunction)(void (*)(void))k_skip, METH_FASTCALL,
     "skip(stream, start, k) -> (end, values walked), or None if a value is cut off"},
    {"scan", (PyCFunction)(void (*)(void))k_scan, METH_FASTCALL,
     "scan(stream, starts, lengths) -> n or None"},
    {"ints", (PyCFunction)(void (*)(void))k_ints, METH_FASTCALL,
     "ints(stream, out, valid, width, signed) -> (n, nulls) or None"},
    {"int32s", (PyCFunction)(void (*)(void))k_int32s, METH_FASTCALL,
     "int32s(stream, out) -> n or None"},
    {"floats", (PyCFunction)(void (*)(void))k_floats, METH_FASTCALL,
     "floats(stream, out, valid, width) -> (n, nulls) or None"},
    {"bools", (PyCFunction)(void (*)(void))k_bools, METH_FASTCALL,
     "bools(stream, out, valid) -> (n, nulls) or None"},
    {"varbinary", (PyCFunction)(void (*)(void))k_varbinary, METH_FASTCALL,
     "varbinary(stream, offsets, data, valid) -> (n, nulls, data bytes, ascii) or None"},
    {"utf8", (PyCFunction)(void (*)(void))k_utf8, METH_FASTCALL,
     "utf8(data, offsets) -> True if every value is well-formed UTF-8"},
    {"runs_sum", (PyCFunction)(void (*)(void))k_runs_sum, METH_FASTCALL,
     "runs_sum(runs) -> sum, or None if a run is negative"},
    {"presence", (PyCFunction)(void (*)(void))k_presence, METH_FASTCALL,
     "presence(runs, out) -> True if the runs fill out exactly"},
    {"offsets", (PyCFunction)(void (*)(void))k_offsets, METH_FASTCALL,
     "offsets(lengths, out) -> total, or None if a length is negative"},
    {"copy_ranges", (PyCFunction)(void (*)(void))k_copy_ranges, METH_FASTCALL,
     "copy_ranges(src, starts, lengths, dst) -> True if the ranges lie in src and fill dst"},
    {"route", (PyCFunction)(void (*)(void))k_route, METH_FASTCALL,
     "route(ids, base, out) -> True if every id indexes base"},
    {"take_lengths", (PyCFunction)(void (*)(void))k_take_lengths, METH_FASTCALL,
     "take_lengths(offsets, idx, valid, out) -> total, or None for a bad index"},
    {"take_bytes", (PyCFunction)(void (*)(void))k_take_bytes, METH_FASTCALL,
     "take_bytes(offsets, data, idx, out_offsets, out) -> True if all in bounds"},
    {"intcomp", (PyCFunction)(void (*)(void))k_intcomp, METH_FASTCALL,
     "intcomp(segment, width, signed, out) -> values decoded into out (out None: counted), or None"},
    {"scatter_offsets", (PyCFunction)(void (*)(void))k_scatter_offsets, METH_FASTCALL,
     "scatter_offsets(offsets, mask, out) -> True if the mask marks every value once"},
    {"fill_runs", (PyCFunction)(void (*)(void))k_fill_runs, METH_FASTCALL,
     "fill_runs(runs, first, second, out) -> True if the runs fit out"},
    {"map_tags", (PyCFunction)(void (*)(void))k_map_tags, METH_FASTCALL,
     "map_tags(tags, to, out, counts) -> True if every tag indexes to"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_kernels",
    "Bounds-checked C loops behind csup_async.decode (see kernels.py).", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit__kernels(void)
{
    const uint16_t probe = 1;
    if (*(const u8 *)&probe != 1) {
        PyErr_SetString(PyExc_ImportError, "csup_async.decode._kernels needs a "
                                           "little-endian machine");
        return NULL;
    }
    return PyModule_Create(&module);
}
