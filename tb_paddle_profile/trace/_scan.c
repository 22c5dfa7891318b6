/* Native fast path of the reader: one chunk of a Paddle trace's "traceEvents" array → records.
 *
 * scan(buffer, start, stop) reads the comma-separated JSON objects in buffer[start:stop] (the
 * inside of the array, as reader._chunk_ranges cuts it) and returns
 *     (count, strings, records)
 * where records is a bytes object of `count` fixed-size records (layout: struct record below,
 * mirrored by reader._RECORD) and strings the chunk's interned strings (names with their
 * "[duration]" suffix stripped, categories, phases, memory places) in order of first appearance.
 *
 * It is a fast path only: whatever it does not recognise exactly (malformed JSON, a value of an
 * unexpected type, a duplicate key, a \u escape, an integer that does not fit, a number that is
 * not exactly convertible, a thread id string it cannot read as the Python reader would) makes
 * it return None, and the reader then decodes that chunk with msgspec, which either gives the
 * same columns or the one-line error. The tests compare both paths on every trace they have and
 * on damaged copies.
 *
 * Every read is bounds-checked against `stop`; nothing is written outside the buffers it owns.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

/* One event. Field order: 8-byte fields, then 4-byte, then 1-byte, so there is no padding
 * inside; reader._RECORD lists the same fields in the same order. */
typedef struct {
    int64_t pid, tid, corr, shared_memory, bytes;
    int64_t increase, cur_alloc, cur_reserved, peak_alloc, peak_reserved, addr;
    int64_t shapes_start, shapes_stop, dtypes_start, dtypes_stop;   /* raw JSON spans, 0/0: none */
    double ts, dur, start, blocks_per_sm, warps_per_sm, occupancy;
    int32_t name, cat, ph, place, registers;
    int32_t grid[3], block[3];
    uint8_t pid_is_str, tid_kind, has_start, pad_;
} record;

/* ------------------------------------------------------------------ interned strings */

/* The interner holds no Python objects: a chunk is scanned without the GIL, and its strings
 * become Python str (checked as UTF-8) only at the end. All memory is PyMem_Raw*. */
typedef struct {
    uint64_t hash;
    int32_t id;         /* -1: empty slot */
} slot;

typedef struct {
    Py_ssize_t off, len;   /* into the arena */
} entry;

typedef struct {
    slot *slots;
    Py_ssize_t cap;     /* power of two */
    entry *entries;     /* by id */
    Py_ssize_t count, entries_cap;
    char *arena;
    Py_ssize_t arena_len, arena_cap;
} interner;

static uint64_t hash_bytes(const char *s, Py_ssize_t n) {
    /* 8 bytes at a time, multiply-xorshift mixing (any good spread will do: collisions only
     * cost a memcmp) */
    uint64_t h = 0x9E3779B97F4A7C15ULL ^ (uint64_t)n;
    Py_ssize_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, s + i, 8);
        h = (h ^ w) * 0xBF58476D1CE4E5B9ULL;
        h ^= h >> 31;
    }
    if (i < n) {
        uint64_t w = 0;
        memcpy(&w, s + i, (size_t)(n - i));
        h = (h ^ w) * 0x94D049BB133111EBULL;
        h ^= h >> 29;
    }
    return h ^ (h >> 32);
}

static int interner_init(interner *in) {
    memset(in, 0, sizeof(*in));
    in->cap = 1024;
    in->slots = (slot *)PyMem_RawMalloc(sizeof(slot) * in->cap);
    in->entries_cap = 512;
    in->entries = (entry *)PyMem_RawMalloc(sizeof(entry) * in->entries_cap);
    in->arena_cap = 1 << 16;
    in->arena = (char *)PyMem_RawMalloc(in->arena_cap);
    if (!in->slots || !in->entries || !in->arena) return -1;
    for (Py_ssize_t i = 0; i < in->cap; i++) in->slots[i].id = -1;
    return 0;
}

static void interner_free(interner *in) {
    PyMem_RawFree(in->slots);
    PyMem_RawFree(in->entries);
    PyMem_RawFree(in->arena);
}

static int interner_grow(interner *in) {
    Py_ssize_t cap = in->cap * 2;
    slot *slots = (slot *)PyMem_RawMalloc(sizeof(slot) * cap);
    if (!slots) return -1;
    for (Py_ssize_t i = 0; i < cap; i++) slots[i].id = -1;
    for (Py_ssize_t i = 0; i < in->cap; i++) {
        if (in->slots[i].id < 0) continue;
        Py_ssize_t j = (Py_ssize_t)(in->slots[i].hash & (uint64_t)(cap - 1));
        while (slots[j].id >= 0) j = (j + 1) & (cap - 1);
        slots[j] = in->slots[i];
    }
    PyMem_RawFree(in->slots);
    in->slots = slots;
    in->cap = cap;
    return 0;
}

/* The id of s[0:n]; -2 when out of memory (the caller declines the chunk). */
static int32_t intern(interner *in, const char *s, Py_ssize_t n) {
    uint64_t h = hash_bytes(s, n);
    Py_ssize_t mask = in->cap - 1;
    Py_ssize_t j = (Py_ssize_t)(h & (uint64_t)mask);
    while (in->slots[j].id >= 0) {
        slot *sl = &in->slots[j];
        if (sl->hash == h) {
            entry *e = &in->entries[sl->id];
            if (e->len == n && memcmp(in->arena + e->off, s, (size_t)n) == 0) return sl->id;
        }
        j = (j + 1) & mask;
    }
    if (in->count >= INT32_MAX - 1) return -2;
    if (in->count == in->entries_cap) {
        Py_ssize_t cap = in->entries_cap * 2;
        entry *entries = (entry *)PyMem_RawRealloc(in->entries, sizeof(entry) * cap);
        if (!entries) return -2;
        in->entries = entries;
        in->entries_cap = cap;
    }
    if (in->arena_len + n > in->arena_cap) {
        Py_ssize_t cap = in->arena_cap;
        while (in->arena_len + n > cap) cap *= 2;
        char *arena = (char *)PyMem_RawRealloc(in->arena, cap);
        if (!arena) return -2;
        in->arena = arena;
        in->arena_cap = cap;
    }
    memcpy(in->arena + in->arena_len, s, (size_t)n);
    int32_t id = (int32_t)in->count++;
    in->entries[id].off = in->arena_len;
    in->entries[id].len = n;
    in->arena_len += n;
    in->slots[j].hash = h;
    in->slots[j].id = id;
    if (in->count * 2 > in->cap && interner_grow(in) < 0) return -2;
    return id;
}

/* The strings as a list of str, in id order; NULL with no exception set when one is not UTF-8
 * (the chunk is then declined: msgspec reports it), NULL with an exception on a failure. */
static PyObject *interner_strings(interner *in) {
    PyObject *list = PyList_New(in->count);
    if (!list) return NULL;
    for (Py_ssize_t i = 0; i < in->count; i++) {
        PyObject *str = PyUnicode_DecodeUTF8(in->arena + in->entries[i].off, in->entries[i].len, "strict");
        if (!str) {
            Py_DECREF(list);
            if (PyErr_ExceptionMatches(PyExc_UnicodeDecodeError)) PyErr_Clear();
            return NULL;
        }
        PyList_SET_ITEM(list, i, str);
    }
    return list;
}

/* ------------------------------------------------------------------ the parser */

typedef struct {
    const unsigned char *p;     /* cursor */
    const unsigned char *end;   /* one past the last byte it may read */
    const unsigned char *base;  /* the buffer's first byte (spans are offsets from it) */
    char *tmp;                  /* unescaped string bytes */
    Py_ssize_t tmp_cap;
    interner names;
} parser;

#define FAIL (-1)

/* WS[c]: JSON whitespace. PLAIN[c]: a byte that may stand in a string as itself (not '"', not
 * '\\', not a control character). Filled by the module's init. */
static unsigned char WS[256], PLAIN[256];

#if defined(__SSE2__) && (defined(__GNUC__) || defined(__clang__))
/* 16 bytes at a time where the compiler targets SSE2 (every x86-64); loads stay below `end`. */
#include <emmintrin.h>
#define HAVE_SSE2_SCAN 1

/* The first byte at or after p that is not PLAIN (or end). */
static inline const unsigned char *skip_plain(const unsigned char *p, const unsigned char *end) {
    const __m128i quote = _mm_set1_epi8('"'), bslash = _mm_set1_epi8('\\');
    /* c < 0x20 (unsigned) <=> (c ^ 0x80) < (0x20 ^ 0x80) as signed bytes */
    const __m128i flip = _mm_set1_epi8((char)0x80), ctl = _mm_set1_epi8((char)(0x20 ^ 0x80));
    while (end - p >= 16) {
        __m128i c = _mm_loadu_si128((const __m128i *)p);
        __m128i special = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(c, quote), _mm_cmpeq_epi8(c, bslash)),
                                       _mm_cmplt_epi8(_mm_xor_si128(c, flip), ctl));
        int mask = _mm_movemask_epi8(special);
        if (mask) return p + __builtin_ctz((unsigned)mask);
        p += 16;
    }
    while (p < end && PLAIN[*p]) p++;
    return p;
}

static inline const unsigned char *skip_space(const unsigned char *p, const unsigned char *end) {
    /* most runs are one space (after ':' and ','): settle those without vectors */
    if (p >= end || !WS[*p]) return p;
    p++;
    if (p >= end || !WS[*p]) return p;
    const __m128i sp = _mm_set1_epi8(' '), nl = _mm_set1_epi8('\n'), cr = _mm_set1_epi8('\r'),
                  tab = _mm_set1_epi8('\t');
    while (end - p >= 16) {
        __m128i c = _mm_loadu_si128((const __m128i *)p);
        __m128i ws = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(c, sp), _mm_cmpeq_epi8(c, nl)),
                                  _mm_or_si128(_mm_cmpeq_epi8(c, cr), _mm_cmpeq_epi8(c, tab)));
        int other = ~_mm_movemask_epi8(ws) & 0xFFFF;
        if (other) return p + __builtin_ctz((unsigned)other);
        p += 16;
    }
    while (p < end && WS[*p]) p++;
    return p;
}
#else
static inline const unsigned char *skip_plain(const unsigned char *p, const unsigned char *end) {
    while (p < end && PLAIN[*p]) p++;
    return p;
}

static inline const unsigned char *skip_space(const unsigned char *p, const unsigned char *end) {
    while (p < end && WS[*p]) p++;
    return p;
}
#endif

static inline void skip_ws(parser *ps) {
    ps->p = skip_space(ps->p, ps->end);
}

/* A JSON string at the cursor (which is at its opening quote). On success *out and *len hold its
 * bytes: a span of the buffer when it has no escapes, else the unescaped copy in ps->tmp.
 * \u escapes and raw control characters fail (the msgspec path decides those). */
static int parse_string(parser *ps, const char **out, Py_ssize_t *len) {
    const unsigned char *p = ps->p + 1, *end = ps->end;
    const unsigned char *s = p;
    p = skip_plain(p, end);
    if (p >= end || *p < 0x20) return FAIL;
    if (*p == '"') {
        *out = (const char *)s;
        *len = p - s;
        ps->p = p + 1;
        return 0;
    }
    /* escapes: copy into tmp */
    Py_ssize_t n = 0;
    p = s;
    while (1) {
        if (p >= end) return FAIL;
        unsigned char c = *p;
        if (c == '"') break;
        if (c < 0x20) return FAIL;
        if (n + 1 > ps->tmp_cap) {
            Py_ssize_t cap = ps->tmp_cap * 2 + 64;
            char *t = (char *)PyMem_RawRealloc(ps->tmp, cap);
            if (!t) return FAIL;
            ps->tmp = t;
            ps->tmp_cap = cap;
        }
        if (c != '\\') {
            ps->tmp[n++] = (char)c;
            p++;
            continue;
        }
        if (p + 1 >= end) return FAIL;
        switch (p[1]) {
            case '"': c = '"'; break;
            case '\\': c = '\\'; break;
            case '/': c = '/'; break;
            case 'b': c = '\b'; break;
            case 'f': c = '\f'; break;
            case 'n': c = '\n'; break;
            case 'r': c = '\r'; break;
            case 't': c = '\t'; break;
            default: return FAIL;   /* \u and invalid escapes */
        }
        ps->tmp[n++] = (char)c;
        p += 2;
    }
    *out = ps->tmp;
    *len = n;
    ps->p = p + 1;
    return 0;
}

/* A JSON number at the cursor: mant·10^exp10 (negative when neg), is_int when written without
 * fraction or exponent; big when it has more than 19 digits or a huge exponent (mant unusable). */
typedef struct {
    uint64_t mant;
    int exp10;
    int neg, is_int, big;
} number;

static int parse_number(parser *ps, number *num) {
    const unsigned char *p = ps->p, *end = ps->end;
    uint64_t mant = 0;
    int exp10 = 0;
    num->neg = 0;
    num->is_int = 1;
    num->big = 0;
    if (p < end && *p == '-') {
        num->neg = 1;
        p++;
    }
    if (p >= end) return FAIL;
    const unsigned char *d0 = p;
    if (*p == '0') {
        p++;
        if (p < end && *p >= '0' && *p <= '9') return FAIL;   /* leading zero */
    } else if (*p >= '1' && *p <= '9') {
        while (p < end && (unsigned)(*p - '0') < 10) mant = mant * 10 + (uint64_t)(*p++ - '0');
    } else {
        return FAIL;
    }
    Py_ssize_t digits = p - d0;
    if (p < end && *p == '.') {
        num->is_int = 0;
        p++;
        const unsigned char *f0 = p;
        while (p < end && (unsigned)(*p - '0') < 10) mant = mant * 10 + (uint64_t)(*p++ - '0');
        if (p == f0) return FAIL;
        digits += p - f0;
        exp10 = -(int)(p - f0 > 100000 ? 100000 : p - f0);
    }
    /* more than 19 digits (leading zeros included): the mantissa may have wrapped */
    if (digits > 19) num->big = 1;
    if (p < end && (*p == 'e' || *p == 'E')) {
        num->is_int = 0;
        p++;
        int eneg = 0, e = 0;
        if (p < end && (*p == '+' || *p == '-')) {
            eneg = *p == '-';
            p++;
        }
        if (p >= end || *p < '0' || *p > '9') return FAIL;
        while (p < end && *p >= '0' && *p <= '9') {
            if (e < 100000) e = e * 10 + (*p - '0');
            p++;
        }
        if (e > 400) num->big = 1;
        else exp10 += eneg ? -e : e;
    }
    num->mant = mant;
    num->exp10 = exp10;
    ps->p = p;
    return 0;
}

static const double POW10[] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
                               1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* The exactly rounded double of a number, when one multiplication or division of two exact
 * doubles gives it (mantissa < 2^53, |exponent| <= 22); otherwise FAIL. */
static int number_to_double(const number *num, double *out) {
    if (num->big || num->mant >= (1ULL << 53) || num->exp10 < -22 || num->exp10 > 22) return FAIL;
    double v = (double)num->mant;
    v = num->exp10 < 0 ? v / POW10[-num->exp10] : v * POW10[num->exp10];
    *out = num->neg ? -v : v;
    return 0;
}

static int number_to_int(const number *num, int64_t *out) {
    /* 18 digits always fit in int64 */
    if (!num->is_int || num->big || num->mant > 999999999999999999ULL) return FAIL;
    *out = num->neg ? -(int64_t)num->mant : (int64_t)num->mant;
    return 0;
}

static int skip_value(parser *ps, int depth);

static int expect_literal(parser *ps, const char *lit, Py_ssize_t n) {
    if (ps->end - ps->p < n || memcmp(ps->p, lit, (size_t)n) != 0) return FAIL;
    ps->p += n;
    return 0;
}

/* Validates and skips any JSON value (nesting at most 64 deep). */
static int skip_value(parser *ps, int depth) {
    if (depth > 64 || ps->p >= ps->end) return FAIL;
    const char *s;
    Py_ssize_t n;
    number num;
    switch (*ps->p) {
        case '"':
            return parse_string(ps, &s, &n);
        case '{':
        case '[': {
            unsigned char close = *ps->p == '{' ? '}' : ']';
            int obj = close == '}';
            ps->p++;
            skip_ws(ps);
            if (ps->p < ps->end && *ps->p == close) {
                ps->p++;
                return 0;
            }
            while (1) {
                if (obj) {
                    if (ps->p >= ps->end || *ps->p != '"' || parse_string(ps, &s, &n) < 0) return FAIL;
                    skip_ws(ps);
                    if (ps->p >= ps->end || *ps->p != ':') return FAIL;
                    ps->p++;
                    skip_ws(ps);
                }
                if (skip_value(ps, depth + 1) < 0) return FAIL;
                skip_ws(ps);
                if (ps->p >= ps->end) return FAIL;
                if (*ps->p == ',') {
                    ps->p++;
                    skip_ws(ps);
                    continue;
                }
                if (*ps->p != close) return FAIL;
                ps->p++;
                return 0;
            }
        }
        case 't':
            return expect_literal(ps, "true", 4);
        case 'f':
            return expect_literal(ps, "false", 5);
        case 'n':
            return expect_literal(ps, "null", 4);
        default:
            return parse_number(ps, &num);
    }
}

static int is_null(parser *ps) {
    if (ps->end - ps->p >= 4 && memcmp(ps->p, "null", 4) == 0) {
        ps->p += 4;
        return 1;
    }
    return 0;
}

static int read_int(parser *ps, int64_t *out) {
    number num;
    if (parse_number(ps, &num) < 0) return FAIL;
    return number_to_int(&num, out);
}

static int read_float(parser *ps, double *out) {
    number num;
    if (parse_number(ps, &num) < 0) return FAIL;
    return number_to_double(&num, out);
}

/* Optional[int] → *out (default when null). */
static int read_opt_int(parser *ps, int64_t *out, int64_t dflt) {
    if (is_null(ps)) {
        *out = dflt;
        return 0;
    }
    return read_int(ps, out);
}

static int read_opt_int32(parser *ps, int32_t *out) {
    int64_t v;
    if (read_opt_int(ps, &v, 0) < 0 || v < INT32_MIN || v > INT32_MAX) return FAIL;
    *out = (int32_t)v;
    return 0;
}

static int read_opt_float(parser *ps, double *out) {
    if (is_null(ps)) {
        *out = 0.0;
        return 0;
    }
    return read_float(ps, out);
}

/* Optional[List[int]] → the first three values as int32, missing ones 0. */
static int read_triple(parser *ps, int32_t *out) {
    out[0] = out[1] = out[2] = 0;
    if (is_null(ps)) return 0;
    if (ps->p >= ps->end || *ps->p != '[') return FAIL;
    ps->p++;
    skip_ws(ps);
    if (ps->p < ps->end && *ps->p == ']') {
        ps->p++;
        return 0;
    }
    for (int i = 0;; i++) {
        int64_t v;
        if (read_int(ps, &v) < 0) return FAIL;
        if (i < 3) {
            if (v < INT32_MIN || v > INT32_MAX) return FAIL;
            out[i] = (int32_t)v;
        }
        skip_ws(ps);
        if (ps->p >= ps->end) return FAIL;
        if (*ps->p == ']') {
            ps->p++;
            return 0;
        }
        if (*ps->p != ',') return FAIL;
        ps->p++;
        skip_ws(ps);
    }
}

/* Optional[str] interned (None → ""). */
static int read_opt_interned(parser *ps, int32_t *out) {
    const char *s;
    Py_ssize_t n;
    if (is_null(ps)) {
        s = "";
        n = 0;
    } else {
        if (ps->p >= ps->end || *ps->p != '"' || parse_string(ps, &s, &n) < 0) return FAIL;
    }
    int32_t id = intern(&ps->names, s, n);
    if (id < 0) return FAIL;
    *out = id;
    return 0;
}

/* A memory event's "addr": a string of 1 to 18 decimal digits → its value; null → -1. Any other
 * form is declined (the msgspec path reads it: reader._addr). */
static int read_addr(parser *ps, int64_t *out) {
    const char *s;
    Py_ssize_t n;
    if (is_null(ps)) {
        *out = -1;
        return 0;
    }
    if (ps->p >= ps->end || *ps->p != '"' || parse_string(ps, &s, &n) < 0) return FAIL;
    if (n < 1 || n > 18) return FAIL;
    int64_t v = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') return FAIL;
        v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return 0;
}

/* A plain (non-optional) str, interned. */
static int read_interned(parser *ps, int32_t *out, int strip_brackets) {
    const char *s;
    Py_ssize_t n;
    if (ps->p >= ps->end || *ps->p != '"' || parse_string(ps, &s, &n) < 0) return FAIL;
    if (strip_brackets && n > 0 && s[n - 1] == ']') {
        /* 'matmul dygraph[12.345 us]' → 'matmul dygraph' (the last "[" and what follows) */
        Py_ssize_t i = n - 1;
        while (i > 0 && s[i - 1] != '[') i--;
        if (i > 0) {
            /* the prefix is checked as UTF-8 when interned; the cut suffix must be too */
            for (Py_ssize_t j = i; j < n; j++)
                if ((unsigned char)s[j] >= 0x80) return FAIL;
            n = i - 1;
        }
    }
    int32_t id = intern(&ps->names, s, n);
    if (id < 0) return FAIL;
    *out = id;
    return 0;
}

/* Digits with an optional leading "-" as int64 (at most 18 digits). */
static int digits_to_int(const char *s, Py_ssize_t n, int64_t *out) {
    Py_ssize_t i = 0;
    int neg = 0;
    if (n > 0 && s[0] == '-') {
        neg = 1;
        i = 1;
    }
    if (i >= n || n - i > 18) return FAIL;
    int64_t v = 0;
    for (; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') return FAIL;
        v = v * 10 + (s[i] - '0');
    }
    *out = neg ? -v : v;
    return 0;
}

/* pid: Union[int, str]; a string must be digits (what int() reads the same way). */
static int read_pid(parser *ps, record *r) {
    if (ps->p < ps->end && *ps->p == '"') {
        const char *s;
        Py_ssize_t n;
        if (parse_string(ps, &s, &n) < 0 || digits_to_int(s, n, &r->pid) < 0) return FAIL;
        r->pid_is_str = 1;
        return 0;
    }
    r->pid_is_str = 0;
    return read_int(ps, &r->pid);
}

/* tid: Union[int, str]. tid_kind 0: a number, 1: a string of digits, 2: digits then "(...)"
 * ("1234(Python)"); anything else fails. */
static int read_tid(parser *ps, record *r) {
    if (ps->p < ps->end && *ps->p == '"') {
        const char *s;
        Py_ssize_t n;
        if (parse_string(ps, &s, &n) < 0) return FAIL;
        Py_ssize_t cut = 0;
        while (cut < n && s[cut] != '(') cut++;
        if (digits_to_int(s, cut, &r->tid) < 0) return FAIL;
        /* msgspec decodes the whole string: a suffix that is not UTF-8 is its error to report */
        for (Py_ssize_t i = cut; i < n; i++)
            if ((unsigned char)s[i] >= 0x80) return FAIL;
        r->tid_kind = cut < n ? 2 : 1;
        return 0;
    }
    r->tid_kind = 0;
    return read_int(ps, &r->tid);
}

/* "12.345 us" → 12.345; only "<plain number> us" (anything else: FAIL). */
static int read_start_time(parser *ps, record *r) {
    if (is_null(ps)) {
        r->has_start = 0;
        return 0;
    }
    const char *s;
    Py_ssize_t n;
    if (ps->p >= ps->end || *ps->p != '"' || parse_string(ps, &s, &n) < 0) return FAIL;
    if (n < 4 || memcmp(s + n - 3, " us", 3) != 0) return FAIL;
    parser sub = *ps;
    sub.p = (const unsigned char *)s;
    sub.end = (const unsigned char *)s + n - 3;
    number num;
    if (parse_number(&sub, &num) < 0 || sub.p != sub.end || num.exp10 > 0) return FAIL;
    /* no exponent written: exp10 <= 0 is the count of decimals */
    if (number_to_double(&num, &r->start) < 0) return FAIL;
    r->has_start = 1;
    return 0;
}

/* The raw JSON value's span (as msgspec.Raw: without surrounding whitespace). */
static int read_raw(parser *ps, int64_t *start, int64_t *stop) {
    const unsigned char *s = ps->p;
    if (skip_value(ps, 0) < 0) return FAIL;
    *start = s - ps->base;
    *stop = ps->p - ps->base;
    return 0;
}

static int key_is(const char *k, Py_ssize_t n, const char *lit) {
    return (Py_ssize_t)strlen(lit) == n && memcmp(k, lit, (size_t)n) == 0;
}

/* Iterates over an object's keys: calls field(ps, key, len, ctx, &seen) with the cursor at the
 * value; field returns 1 when it read the value, 0 to have it skipped, FAIL to fail. */
typedef int (*field_fn)(parser *, const char *, Py_ssize_t, record *, uint32_t *);

static int parse_object(parser *ps, record *r, field_fn field) {
    uint32_t seen = 0;
    if (ps->p >= ps->end || *ps->p != '{') return FAIL;
    ps->p++;
    skip_ws(ps);
    if (ps->p < ps->end && *ps->p == '}') {
        ps->p++;
        return 0;
    }
    while (1) {
        const char *k;
        Py_ssize_t kn;
        if (ps->p >= ps->end || *ps->p != '"') return FAIL;
        /* keys with escapes fail too: their unescaped text could name a field */
        const unsigned char *q = ps->p + 1;
        q = skip_plain(q, ps->end);
        if (q >= ps->end || *q != '"') return FAIL;
        k = (const char *)ps->p + 1;
        kn = (const char *)q - k;
        ps->p = q + 1;
        skip_ws(ps);
        if (ps->p >= ps->end || *ps->p != ':') return FAIL;
        ps->p++;
        skip_ws(ps);
        int rc = field(ps, k, kn, r, &seen);
        if (rc < 0) return FAIL;
        if (rc == 0 && skip_value(ps, 1) < 0) return FAIL;
        skip_ws(ps);
        if (ps->p >= ps->end) return FAIL;
        if (*ps->p == ',') {
            ps->p++;
            skip_ws(ps);
            continue;
        }
        if (*ps->p != '}') return FAIL;
        ps->p++;
        return 0;
    }
}

#define ONCE(bit) do { if (*seen & (1u << (bit))) return FAIL; *seen |= 1u << (bit); } while (0)
/* A known field, the bit-th of its object: read it once with `call` (1: read, FAIL: declined). */
#define FIELD(bit, call) do { ONCE(bit); return (call) < 0 ? FAIL : 1; } while (0)

static int args_field(parser *ps, const char *k, Py_ssize_t n, record *r, uint32_t *seen) {
    switch (n ? k[0] : 0) {
        case 's':
            if (key_is(k, n, "start_time")) FIELD(0, read_start_time(ps, r));
            if (key_is(k, n, "shared memory")) FIELD(1, read_opt_int(ps, &r->shared_memory, 0));
            break;
        case 'c':
            if (key_is(k, n, "correlation id")) FIELD(2, read_opt_int(ps, &r->corr, -1));
            if (key_is(k, n, "current_allocated")) FIELD(3, read_opt_int(ps, &r->cur_alloc, 0));
            if (key_is(k, n, "current_reserved")) FIELD(4, read_opt_int(ps, &r->cur_reserved, 0));
            break;
        case 'g':
            if (key_is(k, n, "grid")) FIELD(5, read_triple(ps, r->grid));
            break;
        case 'b':
            if (key_is(k, n, "block")) FIELD(6, read_triple(ps, r->block));
            if (key_is(k, n, "bytes")) FIELD(7, read_opt_int(ps, &r->bytes, 0));
            if (key_is(k, n, "blocks per SM")) FIELD(8, read_opt_float(ps, &r->blocks_per_sm));
            break;
        case 'r':
            if (key_is(k, n, "registers per thread")) FIELD(9, read_opt_int32(ps, &r->registers));
            break;
        case 'w':
            if (key_is(k, n, "warps per SM")) FIELD(10, read_opt_float(ps, &r->warps_per_sm));
            break;
        case 't':
            if (key_is(k, n, "theoretical achieved occupancy %")) FIELD(11, read_opt_float(ps, &r->occupancy));
            break;
        case 'p':
            if (key_is(k, n, "place")) FIELD(12, read_opt_interned(ps, &r->place));
            if (key_is(k, n, "peak_allocated")) FIELD(13, read_opt_int(ps, &r->peak_alloc, 0));
            if (key_is(k, n, "peak_reserved")) FIELD(14, read_opt_int(ps, &r->peak_reserved, 0));
            break;
        case 'a':
            if (key_is(k, n, "addr")) FIELD(18, read_addr(ps, &r->addr));
            break;
        case 'i':
            if (key_is(k, n, "increase_bytes")) FIELD(15, read_opt_int(ps, &r->increase, 0));
            if (key_is(k, n, "input_shapes")) FIELD(16, read_raw(ps, &r->shapes_start, &r->shapes_stop));
            if (key_is(k, n, "input_dtypes")) FIELD(17, read_raw(ps, &r->dtypes_start, &r->dtypes_stop));
            break;
    }
    return 0;
}

#define EMPTY_ID 0   /* the id of "": a missing name, category, phase or place */

static int event_field(parser *ps, const char *k, Py_ssize_t n, record *r, uint32_t *seen) {
    switch (n ? k[0] : 0) {
        case 'n':
            if (key_is(k, n, "name")) FIELD(0, read_interned(ps, &r->name, 1));
            break;
        case 'p':
            if (key_is(k, n, "ph")) FIELD(1, read_interned(ps, &r->ph, 0));
            if (key_is(k, n, "pid")) FIELD(2, read_pid(ps, r));
            break;
        case 'c':
            if (key_is(k, n, "cat")) FIELD(3, read_interned(ps, &r->cat, 0));
            break;
        case 't':
            if (key_is(k, n, "tid")) FIELD(4, read_tid(ps, r));
            if (key_is(k, n, "ts")) FIELD(5, read_float(ps, &r->ts));
            break;
        case 'd':
            if (key_is(k, n, "dur")) FIELD(6, read_float(ps, &r->dur));
            break;
        case 'a':
            if (key_is(k, n, "args")) {
                ONCE(7);
                if (is_null(ps)) return 1;
                return parse_object(ps, r, args_field) < 0 ? FAIL : 1;
            }
            break;
    }
    return 0;
}

static int parse_event(parser *ps, record *r) {
    memset(r, 0, sizeof(*r));
    r->corr = -1;
    r->addr = -1;
    r->name = r->cat = r->ph = r->place = EMPTY_ID;
    return parse_object(ps, r, event_field);
}

/* ------------------------------------------------------------------ the module */

/* Parses the chunk into *recs / *count; 1 when all of it was taken, 0 when declined, -1 when
 * out of memory. Touches no Python object: runs without the GIL. */
static int scan_events(parser *ps, record **recs, Py_ssize_t *count) {
    Py_ssize_t cap = 0;
    if (intern(&ps->names, "", 0) != EMPTY_ID) return -1;   /* "" is always string 0 */
    skip_ws(ps);
    while (ps->p < ps->end) {
        if (*count == cap) {
            Py_ssize_t ncap = cap ? cap * 2 : 4096;
            record *n = (record *)PyMem_RawRealloc(*recs, sizeof(record) * ncap);
            if (!n) return -1;
            *recs = n;
            cap = ncap;
        }
        if (*ps->p != '{' || parse_event(ps, &(*recs)[*count]) < 0) return 0;
        (*count)++;
        skip_ws(ps);
        if (ps->p >= ps->end) break;
        if (*ps->p != ',') return 0;
        ps->p++;
        skip_ws(ps);
        if (ps->p >= ps->end) return 0;   /* a trailing comma */
    }
    return 1;
}

static PyObject *scan(PyObject *self, PyObject *args) {
    Py_buffer view;
    Py_ssize_t start, stop;
    if (!PyArg_ParseTuple(args, "y*nn", &view, &start, &stop)) return NULL;
    if (start < 0 || stop > view.len || start > stop) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_ValueError, "scan: range outside the buffer");
        return NULL;
    }
    parser ps;
    memset(&ps, 0, sizeof(ps));
    ps.base = (const unsigned char *)view.buf;
    ps.p = ps.base + start;
    ps.end = ps.base + stop;
    PyObject *result = NULL, *strings = NULL, *data = NULL;
    record *recs = NULL;
    Py_ssize_t count = 0;
    int rc = -1;
    if (interner_init(&ps.names) == 0) {
        /* The view keeps the buffer alive and unmoved; other threads may scan other chunks. */
        Py_BEGIN_ALLOW_THREADS
        rc = scan_events(&ps, &recs, &count);
        Py_END_ALLOW_THREADS
    }
    if (rc < 0) {
        PyErr_NoMemory();
        goto done;
    }
    if (rc == 1) {
        strings = interner_strings(&ps.names);
        if (!strings && PyErr_Occurred()) goto done;
    }
    if (!strings) {   /* declined */
        result = Py_None;
        Py_INCREF(result);
        goto done;
    }
    data = PyBytes_FromStringAndSize((const char *)recs, (Py_ssize_t)sizeof(record) * count);
    if (!data) goto done;
    result = Py_BuildValue("(nOO)", count, strings, data);
done:
    Py_XDECREF(strings);
    Py_XDECREF(data);
    PyMem_RawFree(recs);
    PyMem_RawFree(ps.tmp);
    interner_free(&ps.names);
    PyBuffer_Release(&view);
    return result;
}

/* ------------------------------------------------------------------ packed varint columns */

/* One varint at *p (p < end): its value, and *p moved past it; 0 in *ok when it runs past end
 * or is longer than 10 bytes. */
static uint64_t read_varint(const uint8_t **p, const uint8_t *end, int *ok) {
    uint64_t v = 0;
    int shift = 0;
    while (*p < end && shift < 70) {
        uint8_t b = *(*p)++;
        v |= (uint64_t)(b & 0x7F) << shift;
        if (b < 0x80) return v;
        shift += 7;
    }
    *ok = 0;
    return 0;
}

/* packed(buffer, lens, known, zigzag) -> {field: (values, counts)} or None.
 *
 * buffer holds protobuf messages end to end, lens (int64, native order) their sizes. Every
 * top-level field of every message must be a length-delimited field whose number is set in the
 * bit mask `known` (numbers 1..63), each holding packed varints; anything else (another wire
 * type or field, a length or a varint running past its message or segment) gives None, and the
 * caller reads the messages through the protobuf API. For each known field: values (int64, the
 * values of every message end to end, zigzag-decoded where its bit in `zigzag` is set) and counts
 * (int64, how many per message), both bytearrays. A field given in several segments of one message
 * is their concatenation, as protobuf parses it. */
static PyObject *packed(PyObject *self, PyObject *args) {
    Py_buffer buf, lens;
    unsigned long long known, zigzag;
    if (!PyArg_ParseTuple(args, "y*y*KK", &buf, &lens, &known, &zigzag)) return NULL;
    PyObject *result = NULL, *vals[64] = {0}, *cnts[64] = {0};
    Py_ssize_t n = lens.len / (Py_ssize_t)sizeof(int64_t), total[64] = {0};
    const int64_t *len = (const int64_t *)lens.buf;
    const uint8_t *base = (const uint8_t *)buf.buf;
    int ok = 1;
    known &= ~1ULL;   /* field 0 does not exist */
    for (int f = 1; f < 64; f++) {
        if (!(known >> f & 1)) continue;
        cnts[f] = PyByteArray_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(int64_t));
        if (!cnts[f]) goto done;
        memset(PyByteArray_AS_STRING(cnts[f]), 0, (size_t)n * sizeof(int64_t));
    }
    /* pass 1: check the layout and count the values of each field and message */
    Py_ssize_t at = 0;
    for (Py_ssize_t i = 0; i < n && ok; i++) {
        if (len[i] < 0 || len[i] > buf.len - at) { ok = 0; break; }
        const uint8_t *p = base + at, *end = p + len[i];
        at += len[i];
        while (p < end && ok) {
            uint64_t tag = read_varint(&p, end, &ok);
            uint64_t f = tag >> 3;
            if (!ok || (tag & 7) != 2 || f >= 64 || !(known >> f & 1)) { ok = 0; break; }
            uint64_t size = read_varint(&p, end, &ok);
            if (!ok || size > (uint64_t)(end - p)) { ok = 0; break; }
            const uint8_t *seg_end = p + size;
            if (size && seg_end[-1] >= 0x80) { ok = 0; break; }
            Py_ssize_t c = 0;
            for (; p < seg_end; p++) c += *p < 0x80;
            ((int64_t *)PyByteArray_AS_STRING(cnts[f]))[i] += c;
            total[f] += c;
        }
    }
    if (!ok || at != buf.len) { result = Py_None; Py_INCREF(result); goto done; }
    /* pass 2: decode */
    int64_t *out[64] = {0};
    for (int f = 1; f < 64; f++) {
        if (!cnts[f]) continue;
        vals[f] = PyByteArray_FromStringAndSize(NULL, total[f] * (Py_ssize_t)sizeof(int64_t));
        if (!vals[f]) goto done;
        out[f] = (int64_t *)PyByteArray_AS_STRING(vals[f]);
    }
    const uint8_t *p = base, *end = base + buf.len;
    while (p < end && ok) {
        uint64_t f = read_varint(&p, end, &ok) >> 3;
        uint64_t size = read_varint(&p, end, &ok);
        const uint8_t *seg_end = p + size;
        int zz = (int)(zigzag >> f & 1);
        while (p < seg_end && ok) {
            uint64_t v = read_varint(&p, seg_end, &ok);
            *out[f]++ = zz ? (int64_t)((v >> 1) ^ (0 - (v & 1))) : (int64_t)v;
        }
    }
    if (!ok) { result = Py_None; Py_INCREF(result); goto done; }
    result = PyDict_New();
    if (!result) goto done;
    for (int f = 1; f < 64; f++) {
        if (!cnts[f]) continue;
        PyObject *pair = PyTuple_Pack(2, vals[f], cnts[f]), *key = PyLong_FromLong(f);
        int bad = !pair || !key || PyDict_SetItem(result, key, pair) < 0;
        Py_XDECREF(pair);
        Py_XDECREF(key);
        if (bad) {
            Py_CLEAR(result);
            goto done;
        }
    }
done:
    for (int f = 0; f < 64; f++) {
        Py_XDECREF(vals[f]);
        Py_XDECREF(cnts[f]);
    }
    PyBuffer_Release(&buf);
    PyBuffer_Release(&lens);
    return result;
}

static PyMethodDef methods[] = {
    {"scan", scan, METH_VARARGS,
     "scan(buffer, start, stop) -> (count, strings, records) or None: see reader._native_chunk_columns."},
    {"packed", packed, METH_VARARGS,
     "packed(buffer, lens, known, zigzag) -> {field: (values, counts)} or None: see crossrank.load.packed_columns."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_scan", NULL, -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__scan(void) {
    for (int c = 0; c < 256; c++) {
        WS[c] = c == ' ' || c == '\n' || c == '\r' || c == '\t';
        PLAIN[c] = c >= 0x20 && c != '"' && c != '\\';
    }
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    if (PyModule_AddIntConstant(m, "RECORD_SIZE", (long)sizeof(record)) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
